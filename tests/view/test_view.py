"""graphkit view: a self-contained HTML page whose data round-trips, content only when
asked, one-line errors. What a real browser makes of the page: tests/e2e/test_view_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.view import embed_json, render_html, session_view
from tests.helpers.browser import Dom
from tests.helpers.cli import graphkit
from tests.helpers.view_pages import (
    CONTENT,
    DEEP,
    DEEPEST,
    IMG,
    SESSION,
    view,
)


def test_content_only_with_include_content(nasty: Path, tmp_path: Path) -> None:
    page = view(nasty, SESSION, tmp_path / "v.html").read_text()
    assert "SECRET-CONTENT" not in page
    data = _embedded(page)
    assert data["include_content"] is False
    assert all(t["content"] is None and t["props"] == {} for t in data["threads"])
    with_content = _embedded(view(nasty, SESSION, tmp_path / "c.html",
                                  "--include-content").read_text())
    texts = [m["text"] for t in with_content["threads"] for m in t["content"]]
    assert CONTENT in texts and IMG in texts


def _embedded(page: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="graphkit-data">(.*?)</script>', page,
                  re.S)
    assert m is not None
    return dict(json.loads(m.group(1)))


def test_the_page_is_self_contained_and_its_data_round_trips(nasty: Path,
                                                             tmp_path: Path) -> None:
    data = session_view(SnapshotReader(nasty), SESSION, include_content=True)
    page = render_html(data)
    assert _embedded(page) == data
    template = page.replace(embed_json(data), "")
    dom = Dom(template)
    assert not [(t, a) for t, a in dom.elements if "src" in a or "href" in a]
    assert [t for t, _ in dom.elements if t in ("link", "iframe", "object", "embed",
                                                "img")] == []
    (csp,) = [a["content"] for t, a in dom.elements
              if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp is not None and "default-src 'none'" in csp and "unsafe" not in csp
    assert "http:" not in template and "https:" not in template


def test_view_data_from_the_tree(samples: Path) -> None:
    data = session_view(SnapshotReader(samples), DEEP)
    threads = data["threads"]
    by_id = {t["id"]: i for i, t in enumerate(threads)}
    deepest = threads[by_id[DEEPEST]]
    assert deepest["depth"] == 5 and deepest["kind"] == "subagent"
    # Every parent comes before its children and is one level up.
    for t in threads:
        if t["parent"] is not None:
            assert t["parent"] < by_id[t["id"]]
            assert threads[t["parent"]]["depth"] == t["depth"] - 1
    assert all(t["model"] and t["last_seen"] >= t["first_seen"] for t in threads)
    assert data["session"]["messages"] == sum(t["messages"] for t in threads)


def test_view_cli_errors_and_stdout(samples: Path, tmp_path: Path) -> None:
    r = graphkit("view", "nope", "--snapshot", samples, "--out", tmp_path / "v.html")
    assert r.returncode == 2 and "no session has the id 'nope'" in r.output
    assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / "v.html").exists()
    r = graphkit("view", DEEP, "--snapshot", samples, "--out", "-")
    assert r.returncode == 0 and r.stdout.startswith("<!doctype html>")


