"""node-link's JSON writer is ``json.dump(..., ensure_ascii=False)`` byte for byte."""

from __future__ import annotations

import io
import json

import pytest

from graphkit.export.formats.node_link import write_json


@pytest.mark.parametrize("chunk", [1, 2, 3, 4096])
def test_write_json_is_json_dump(chunk: int) -> None:
    data = {"directed": True, "multigraph": True, "graph": {"é": "ü\u2028", "n": None},
            "nodes": [{"id": f"n{i}", "v": [i, 1.5, "\x00"]} for i in range(7)],
            "edges": [], "more": [[], {}], "tail": 3}
    want, got = io.StringIO(), io.StringIO()
    json.dump(data, want, ensure_ascii=False)
    write_json(data, got, chunk=chunk)
    assert got.getvalue() == want.getvalue()
