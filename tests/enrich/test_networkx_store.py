"""The NetworkX store's filtered ``node_rows``: found through an index (lineage asks it
on every query), so it must give what a scan of every node gives, also after another
load changed the graph."""

from __future__ import annotations

from pathlib import Path

from graphkit.builds.run import build
from graphkit.enrich.networkx_store import TYPE, NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.continuations import continues
from graphkit.snapshot import write_snapshot
from tests.helpers.rows import table
from tests.helpers.usage_rows import generate


def _scan(store: NetworkXStore, node_type: str, columns: list[str], prop: str,
          values: list[str]) -> list[dict[str, object]]:
    """What a filter over every node gives (the rows ordered by id)."""
    rows = [{"id": nid, **{c: a.get(c) for c in columns}}
            for nid, a in store.graph.nodes(data=True)
            if a.get(TYPE) == node_type and (nid if prop == "id" else a.get(prop)) in values]
    return sorted(rows, key=lambda r: str(r["id"]))


def test_filtered_rows_equal_a_scan_and_the_snapshot_reader(tmp_path: Path) -> None:
    rows, _ = generate()
    store = _fresh_store(rows)
    write_snapshot(build(table(rows)).graph, tmp_path / "snap")
    reader = SnapshotReader(tmp_path / "snap")
    v = store.vocabulary
    every = store.node_rows(v.session, [v.session_key])
    assert len(every) > 3
    keys = [str(r[v.session_key]) for r in every]
    ids = [str(r["id"]) for r in every]
    # Several, one twice, and ones no node has (a thread's key is no session's key).
    asked = [keys[2], keys[0], keys[2], "no-such-session", ids[1]]
    for prop, values in ((v.session_key, asked), ("id", [ids[3], ids[0], ids[3], keys[1]])):
        got = store.node_rows(v.session, [v.session_key], where=(prop, values))
        assert got == _scan(store, v.session, [v.session_key], prop, values)
        assert got == reader.node_rows(v.session, [v.session_key], where=(prop, values))
        assert len(got) == 2
    assert store.node_rows(v.session, [v.session_key], where=(v.session_key, [])) == []
    # Another type's nodes are not a session's, whatever their id.
    thread_ids = [str(r["id"]) for r in store.node_rows(v.thread, [])]
    assert store.node_rows(v.session, [], where=("id", thread_ids)) == []


def test_a_second_load_is_seen_by_the_next_lookup() -> None:
    rows, _ = generate()
    sessions = sorted({str(r["session_id"]) for r in rows})
    store = NetworkXStore()
    store.load(build(table([r for r in rows if r["session_id"] == sessions[0]])).graph)
    v = store.vocabulary
    fresh = _fresh_store(rows)
    # The session continuing the most others (a chain of three in these rows).
    later = max(sessions, key=lambda s: len(continues(fresh, s)))
    assert len(continues(fresh, later)) >= 2
    assert store.node_rows(v.session, [], where=(v.session_key, [later])) == []
    assert continues(store, later) == []  # builds the index before the next load
    store.load(build(table(rows)).graph)
    got = store.node_rows(v.session, [v.session_key], where=(v.session_key, [later]))
    assert [r[v.session_key] for r in got] == [later]
    assert continues(store, later) == continues(fresh, later)


def _fresh_store(rows: list[dict[str, object]]) -> NetworkXStore:
    """All ``rows`` in one load: what a store loaded twice must answer."""
    store = NetworkXStore()
    store.load(build(table(rows)).graph)
    return store
