from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from graphkit.builds.run import build, graph_from_records
from graphkit.enrich.networkx_store import from_networkx, to_networkx
from graphkit.snapshot import SnapshotError, read_manifest, read_snapshot, write_snapshot
from tests.helpers.rows import identity_cases, row


def assert_same_tables(a, b) -> None:  # type: ignore[no-untyped-def]
    assert set(a.nodes) == set(b.nodes)
    assert set(a.edges) == set(b.edges)
    for t in a.nodes:
        assert a.nodes[t].key == b.nodes[t].key
        assert a.nodes[t].table.equals(b.nodes[t].table, check_metadata=False), t
    for t in a.edges:
        assert (a.edges[t].source_type, a.edges[t].target_type) == (
            b.edges[t].source_type, b.edges[t].target_type)
        assert a.edges[t].table.equals(b.edges[t].table, check_metadata=False), t


@pytest.mark.parametrize("granularity", ["thread", "message"])
def test_round_trip_is_lossless(tmp_path: Path, granularity: str) -> None:
    g = graph_from_records(identity_cases(), granularity=granularity)
    write_snapshot(g, tmp_path / "snap")
    back = read_snapshot(tmp_path / "snap")
    assert_same_tables(g, back)
    # snapshot -> NetworkX -> tables -> snapshot again: still the same graph.
    G = to_networkx(back)
    again = from_networkx(G)
    assert_same_tables(g, again)
    write_snapshot(again, tmp_path / "snap2")
    G2 = to_networkx(read_snapshot(tmp_path / "snap2"))
    assert nx.utils.graphs_equal(G, G2)
    assert dict(G.nodes(data=True)) == dict(G2.nodes(data=True))


def test_manifest(tmp_path: Path, sample_rows: Path) -> None:
    result = build([sample_rows])
    m = write_snapshot(result.graph, tmp_path / "s", inputs=result.sources.fingerprints,
                       summary=result.summary())
    on_disk = read_manifest(tmp_path / "s")
    assert on_disk == json.loads(json.dumps(m))
    assert on_disk["contract"] == {"name": "ai-gateway-graph", "version": 1}
    assert on_disk["id_recipe"] == 1
    assert on_disk["graphkit_version"]
    assert on_disk["counts"]["nodes"]["Thread"] == result.graph.node_counts()["Thread"]
    assert on_disk["created_at"].endswith("+00:00")
    fps = on_disk["inputs"]
    # Size and mtime by default; the SHA-256 only when asked for (--hash-inputs).
    assert fps and all(f["size"] > 0 and f["mtime_ns"] > 0 and "sha256" not in f for f in fps)
    hashed = build([sample_rows], hash_inputs=True).sources.fingerprints
    assert [{k: v for k, v in f.items() if k != "sha256"} for f in hashed] == fps
    assert all(f["sha256"] == hashlib.sha256(Path(f["path"]).read_bytes()).hexdigest()
               for f in hashed)
    assert sorted(p.name for p in (tmp_path / "s" / "nodes").iterdir()) == sorted(
        f"{t}.parquet" for t in result.graph.nodes)


def test_rewrite_replaces_whole_and_leaves_no_temp(tmp_path: Path) -> None:
    g1 = graph_from_records([row("s1", message_id="a")])
    g2 = graph_from_records([row("s2", message_id="b"), row("s3", message_id="c")])
    write_snapshot(g1, tmp_path / "snap")
    write_snapshot(g2, tmp_path / "snap")
    assert read_snapshot(tmp_path / "snap").node_counts()["Session"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]


def test_failed_write_keeps_the_old_snapshot(tmp_path: Path) -> None:
    g = graph_from_records([row("s1", message_id="a")])
    write_snapshot(g, tmp_path / "snap")
    bad = graph_from_records([row("s2", message_id="b")])
    bad.edges["HAS_THREAD"] = None  # type: ignore[assignment]
    with pytest.raises(AttributeError):
        write_snapshot(bad, tmp_path / "snap")
    assert read_snapshot(tmp_path / "snap").nodes["Session"].table.column(
        "session_id").to_pylist() == ["s1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]


def test_refuses_to_overwrite_a_non_snapshot_folder(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("mine")
    with pytest.raises(SnapshotError, match="graphkit did not write"):
        write_snapshot(graph_from_records([row("s", message_id="a")]), tmp_path / "docs")
    assert (tmp_path / "docs" / "notes.txt").read_text() == "mine"


def test_content_is_left_out_unless_asked(tmp_path: Path) -> None:
    g = graph_from_records([row("s", message_id="m", content_text="secret words")],
                           granularity="message")
    assert "text" not in g.nodes["Message"].table.column_names
    from graphkit.contract.loader import load_contract
    from graphkit.core.schema import tag_rows
    from graphkit.projection.conform import conform
    from graphkit.projection.project import project
    from tests.helpers.rows import table

    c = load_contract()
    rows = tag_rows(conform(c, table([row("s", message_id="m", content_text="secret words")]),
                        "t"), "t")
    with_text = project(c, rows, granularity="message", include_content=True).graph
    write_snapshot(with_text, tmp_path / "plain")
    write_snapshot(with_text, tmp_path / "full", include_content=True)
    assert "text" not in read_snapshot(tmp_path / "plain").nodes["Message"].table.column_names
    assert read_snapshot(tmp_path / "full").nodes["Message"].table.column(
        "text").to_pylist() == ["secret words"]
    blob = b"".join(p.read_bytes() for p in (tmp_path / "plain").rglob("*") if p.is_file())
    assert b"secret words" not in blob


def test_missing_snapshot_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match=r"no manifest\.json"):
        read_snapshot(tmp_path)


def test_tables_are_zstd_and_a_snappy_snapshot_still_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    import graphkit.snapshot.write as snapshot_io

    g = graph_from_records(identity_cases())
    write_snapshot(g, tmp_path / "new")
    files = sorted((tmp_path / "new").rglob("*.parquet"))
    assert files
    for f in files:
        meta = pq.ParquetFile(f).metadata
        assert {meta.row_group(0).column(i).compression
                for i in range(meta.num_columns)} == {"ZSTD"}, f
    # A snapshot written before the codec changed (snappy) reads and checks as before.
    monkeypatch.setattr(snapshot_io, "COMPRESSION", "snappy")
    write_snapshot(g, tmp_path / "old")
    old = sorted((tmp_path / "old").rglob("*.parquet"))
    assert pq.ParquetFile(old[0]).metadata.row_group(0).column(0).compression == "SNAPPY"
    assert_same_tables(g, read_snapshot(tmp_path / "old"))
    assert_same_tables(read_snapshot(tmp_path / "new"), read_snapshot(tmp_path / "old"))


@pytest.mark.parametrize("manifest", [
    {"version": 1, "inputs": [{"path": "/a/ü.jsonl", "size": 3, "mtime_ns": 2**62}] * 3,
     "tables": {"x": {"rows": 0, "cols": [], "meta": {}}}, "summary": {"s": "a\u2028\"b\\"}},
    {"summary": {"ratio": 1e16, "small": 2.5e-7, "neg": -0.0, "big": 2**70}},
    {"summary": {"nan": float("nan"), "inf": float("inf")}},  # json writes these; msgspec refuses
    {},
])
def test_manifest_bytes_are_jsons_indented_text(manifest: dict) -> None:
    from graphkit.snapshot.write import manifest_bytes

    assert manifest_bytes(manifest) == (json.dumps(manifest, indent=2) + "\n").encode()


def _inputs(n: int, odd: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"path": f"/t/p/{i:05d}.jsonl", "size": i * 7,
                                  "mtime_ns": 1_796_150_406_487_365_272 + i,
                                  "sha256": f"{i:064x}"} for i in range(n)]
    if odd is not None:
        out[n // 2] = {**out[n // 2], **odd}
    return out


class _Size(int):
    """An int subclass whose text json and msgspec might spell apart."""


@pytest.mark.parametrize("odd", [
    None,                                      # the msgspec way: plain ASCII, ints, text
    {"path": "/t/ü.jsonl"},                    # non-ASCII: json escapes it
    {"path": "/t/a\x7fb.jsonl"},               # DEL: json escapes it too
    {"path": '/t/"q"\\b\n.jsonl'},             # quotes, backslash, newline: escaped
    {"path": "/t/\u2028.jsonl"},
    {"size": 2.5},                             # a float: digits spelled apart
    {"size": 1e16},
    {"size": float("nan")},
    {"size": 2**70},                           # a big int: the same digits
    {"size": True, "sha256": None},
    {"size": _Size(5)},
    {"size": (1, 2)},                          # a tuple: json writes a list
    {7: "int key"},                            # json makes it text
    {"size": {"nested": 1e16}},                # a float below a record: digits apart
    {"size": [_Size(5)]},                      # an int subclass in a list in a record
])
def test_manifest_bytes_of_many_inputs_are_jsons_indented_text(odd: dict[Any, Any] | None
                                                               ) -> None:
    from graphkit.snapshot.write import manifest_bytes

    manifest = {"kind": "graphkit-snapshot", "format": 3, "nodes": {"A": {"count": 1}},
                "inputs": _inputs(400, odd), "summary": {"rows_read": 5, "nodes": {}}}
    assert manifest_bytes(manifest) == (json.dumps(manifest, indent=2) + "\n").encode()


def test_manifest_bytes_of_plain_inputs_are_written_without_json(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import graphkit.snapshot.write as snapshot_io

    manifest = {"format": 3, "inputs": _inputs(300), "summary": {"nodes": {"A": 1}}}
    expected = (json.dumps(manifest, indent=2) + "\n").encode()

    def refused(*_a: Any, **_k: Any) -> str:
        raise AssertionError("json.dumps called")

    monkeypatch.setattr(snapshot_io.json, "dumps", refused)
    assert snapshot_io.manifest_bytes(manifest) == expected


def test_a_manifest_changed_since_the_last_check_is_read_again(tmp_path: Path) -> None:
    """The target check keeps the last manifest's parsed head while its stat holds: a
    manifest rewritten in place (same size, its mtime put back) is read again and a
    foreign one refused."""
    import os
    import time

    from graphkit.snapshot.swap import check_replaceable

    snap = tmp_path / "snap"
    write_snapshot(graph_from_records(identity_cases()), snap)
    check_replaceable(snap)  # ours: the head is kept
    manifest = snap / "manifest.json"
    text = manifest.read_text()
    st = manifest.stat()
    foreign = text.replace('"graphkit-snapshot"', '"someone-elses-xyz"', 1)
    assert foreign != text and len(foreign) == len(text)
    time.sleep(0.01)  # a ctime the clock can tell from the first
    manifest.write_text(foreign)
    os.utime(manifest, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(SnapshotError, match="not graphkit's"):
        check_replaceable(snap)
    manifest.write_text(text)
    check_replaceable(snap)
