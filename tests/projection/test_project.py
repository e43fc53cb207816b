"""The default contract's projection of every identity case in DOMAIN.md §2."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from graphkit.contract.loader import load_contract
from graphkit.core.ids import node_id
from graphkit.core.schema import tag_rows
from graphkit.projection.conform import conform
from graphkit.projection.project import Projection, project
from tests.helpers.rows import CLAUDE, CODEX_CHILD, CODEX_ROOT, identity_cases, row, spawned, table


def run(rows: list[dict[str, Any]], **kw: Any) -> Projection:
    c = load_contract()
    return project(c, tag_rows(conform(c, table(rows), "<test>"), "<test>"), **kw)


def nodes(p: Projection, t: str) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in p.graph.nodes[t].table.to_pylist()}


def edges(p: Projection, t: str) -> set[tuple[str, str]]:
    tab = p.graph.edges[t].table
    return set(zip(tab.column("source").to_pylist(), tab.column("target").to_pylist(),
                   strict=True))


def thread(scope: str, agent: str | None = None) -> str:
    return node_id("Thread", [scope, agent])


@pytest.fixture(scope="module")
def cases() -> Projection:
    return run(identity_cases())


def test_claude_main_loop(cases: Projection) -> None:
    sessions = nodes(cases, "Session")
    s = sessions[node_id("Session", [CLAUDE])]
    assert s["messages"] == 4  # cm1, cm2, am1, bm1 — the duplicate part counts once
    main = nodes(cases, "Thread")[thread(CLAUDE)]
    assert (main["thread_id"], main["kind"], main["session_id"]) == (CLAUDE, "main", CLAUDE)
    assert (node_id("Session", [CLAUDE]), thread(CLAUDE)) in edges(cases, "HAS_THREAD")


def test_claude_subagent_hangs_off_the_spawning_thread(cases: Projection) -> None:
    t = nodes(cases, "Thread")[thread(CLAUDE, "agentA")]
    assert (t["thread_id"], t["kind"], t["is_sidechain"]) == ("agentA", "subagent", True)
    assert (thread(CLAUDE, "agentA"), thread(CLAUDE)) in edges(cases, "PARENT_THREAD")
    agent = nodes(cases, "Agent")[node_id("Agent", ["agentA"])]
    # The description is model-written text: content, kept only when asked (issue 31).
    assert agent["agent_type"] == "Explore" and "description" not in agent
    asked = nodes(run(identity_cases(), include_content=True), "Agent")
    assert asked[node_id("Agent", ["agentA"])]["description"] == "find routes"
    assert (thread(CLAUDE, "agentA"), node_id("Agent", ["agentA"])) in edges(cases, "HAS_AGENT")


def test_nested_subagent_parent_is_the_subagent(cases: Projection) -> None:
    assert (thread(CLAUDE, "agentB"), thread(CLAUDE, "agentA")) in edges(cases, "PARENT_THREAD")
    # Subagents are threads of the same session, not sessions of their own.
    assert set(nodes(cases, "Session")) == {node_id("Session", [CLAUDE]),
                                            node_id("Session", [CODEX_ROOT])}


def test_codex_thread_and_child(cases: Projection) -> None:
    threads = nodes(cases, "Thread")
    root = threads[thread(CODEX_ROOT)]
    child = threads[thread(CODEX_CHILD)]
    assert (root["kind"], child["kind"]) == ("thread", "child-thread")
    assert child["session_id"] == CODEX_ROOT
    assert (thread(CODEX_CHILD), thread(CODEX_ROOT)) in edges(cases, "PARENT_THREAD")
    assert edges(cases, "PARENT_THREAD") == {
        (thread(CLAUDE, "agentA"), thread(CLAUDE)),
        (thread(CLAUDE, "agentB"), thread(CLAUDE, "agentA")),
        (thread(CODEX_CHILD), thread(CODEX_ROOT)),
    }


def test_duplicates_count_once_and_null_session_is_rejected(cases: Projection) -> None:
    assert cases.rows_read == 8
    assert cases.duplicates == 1
    assert cases.rows_rejected == 1
    assert cases.rows_used == 6
    rej = cases.rejects.to_pylist()[0]
    assert rej["message_id"] == "orphan"
    assert rej["__column"] == "session_id"
    assert "session_id is null" in rej["__reason"]
    assert rej["__row"] == 8


def test_context_nodes(cases: Projection) -> None:
    ws = {r["workspace"] for r in cases.graph.nodes["Workspace"].table.to_pylist()}
    assert ws == {"/home/dev/src/webapp", "/home/dev/src/api"}
    models = {r["model"] for r in cases.graph.nodes["Model"].table.to_pylist()}
    assert models == {"claude-sonnet-4-5", "claude-haiku-4-5", "gpt-5-codex", "gpt-5-codex-mini"}
    tools = {r["tool_name"]: r["calls"] for r in cases.graph.nodes["Tool"].table.to_pylist()}
    assert tools == {"Task": 1, "Agent": 1}


def test_order_of_rows_does_not_change_the_graph(cases: Projection) -> None:
    shuffled = identity_cases()
    random.Random(3).shuffle(shuffled)
    again = run(shuffled)
    for t, nt in cases.graph.nodes.items():
        assert again.graph.nodes[t].table.equals(nt.table), t
    for t, et in cases.graph.edges.items():
        assert again.graph.edges[t].table.equals(et.table), t


@pytest.mark.parametrize("granularity", ["thread", "message"])
def test_rules_run_in_this_thread_for_small_tables_and_build_the_same_graph(
        granularity: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``_THREADED_ROWS`` rows the rules run one after another in the calling
    thread (no executor threads started); the graph is the one the threads build."""
    import threading

    import graphkit.projection.project as proj

    started: list[str] = []
    real_start = threading.Thread.start

    def counted(self: threading.Thread) -> None:
        started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", counted)
    serial = run(identity_cases(), granularity=granularity)
    assert started == []
    monkeypatch.setattr(proj, "_THREADED_ROWS", 0)
    threaded = run(identity_cases(), granularity=granularity)
    assert started  # the same rows on threads
    assert serial.rows_read == threaded.rows_read and serial.duplicates == threaded.duplicates
    assert serial.rejects.equals(threaded.rejects)
    assert serial.dropped_edges == threaded.dropped_edges
    for kind in ("nodes", "edges"):
        mine, theirs = getattr(serial.graph, kind), getattr(threaded.graph, kind)
        assert list(mine) == list(theirs)
        for t in mine:
            assert mine[t].table.equals(theirs[t].table), t


def test_in_this_thread_executor_keeps_order_and_raises_as_a_thread_would() -> None:
    from graphkit.projection.project import _InThisThread

    with _InThisThread() as pool:
        assert list(pool.map(lambda a, b: a * b, [1, 2, 3], [4, 5, 6])) == [4, 10, 18]
        failed = pool.submit(lambda: 1 // 0)
        assert pool.submit(lambda x: x + 1, 41).result() == 42
    with pytest.raises(ZeroDivisionError):
        failed.result()


def test_pre_split_schema_rows_are_rejected_not_misread() -> None:
    p = run([row("s-new", message_id="n1"),
             row(None, conversation_id="s-old", schema_version=5, message_id="o1"),
             row("s-old", conversation_id="s-old", schema_version=5, message_id="o2")])
    assert p.rows_rejected == 2
    reasons = [r["__reason"] for r in p.rejects.to_pylist()]
    assert "session_id is null" in reasons[0]
    assert "schema_version is older than 6" in reasons[1]
    assert [r["session_id"] for r in p.graph.nodes["Session"].table.to_pylist()] == ["s-new"]


def test_message_granularity_adds_messages_and_next_chain() -> None:
    rows = [row("s", message_id="m1"), row("s", message_id="m2", part_id="m2:0"),
            row("s", message_id="m2", part_id="m2:1", part_index=1),
            row("s", message_id="m3"),
            row("s", agent_id="ag", attributes=spawned("nope"), message_id="a1")]
    p = run(rows, granularity="message")
    msgs = {r["message_id"]: r for r in p.graph.nodes["Message"].table.to_pylist()}
    assert set(msgs) == {"m1", "m2", "m3", "a1"}
    assert msgs["m2"]["parts"] == 2
    assert "text" not in msgs["m2"]  # no content unless asked for
    m = {k: node_id("Message", [k]) for k in msgs}
    assert edges(p, "NEXT") == {(m["m1"], m["m2"]), (m["m2"], m["m3"])}
    assert len(edges(p, "HAS_MESSAGE")) == 4
    assert "Message" not in run(rows).graph.nodes


def test_include_content_keeps_message_text() -> None:
    rows = [row("s", message_id="m1", content_text="hello")]
    p = run(rows, granularity="message", include_content=True)
    assert p.graph.nodes["Message"].table.column("text").to_pylist() == ["hello"]


def test_dangling_parent_is_counted_not_invented() -> None:
    p = run([row("s", conversation_id="child", parent_thread_id="ghost")])
    parent = p.graph.edges.get("PARENT_THREAD")
    assert parent is None or parent.table.num_rows == 0
    assert p.dropped_edges["PARENT_THREAD"]["missing_target"] == 1


def test_struct_attributes_from_json_lines_work_too() -> None:
    c = load_contract()
    rows = table([row("s", message_id="m1", part_type="tool_call", tool_call_id="t1")])
    rows = rows.drop_columns(["attributes"])
    sub = pa.table({"attributes": pa.array([{"claude": {"spawned_by_tool_use_id": "t1"}}])})
    child = table([row("s", agent_id="ag", message_id="m2")]).drop_columns(["attributes"])
    child = child.append_column("attributes", sub.column("attributes"))
    parent = rows.append_column("attributes", pa.nulls(1, sub.column("attributes").type))
    both = pa.concat_tables([parent, child])
    p = project(c, tag_rows(conform(c, both, "<t>"), "<t>"))
    assert edges(p, "PARENT_THREAD") == {(thread("s", "ag"), thread("s"))}


def test_rows_without_part_id_or_time_still_build() -> None:
    c = load_contract()
    t = table([row("s", message_id="m1"), row("s", message_id="m2"),
               row("s", agent_id="ag", message_id="m3")])
    t = t.drop_columns(["part_id", "message_created_at"])
    p = project(c, tag_rows(conform(c, t, "<t>"), "<t>"))
    assert p.duplicates == 0 and p.rows_used == 3
    assert p.graph.node_counts()["Thread"] == 2
    t2 = table([row("s", message_id="m1", part_id=None), row("s", message_id="m2", part_id=None),
                row("s", message_id="m3", part_id="p"), row("s", message_id="m3", part_id="p")])
    p2 = project(c, tag_rows(conform(c, t2, "<t>"), "<t>"))
    assert (p2.rows_used, p2.duplicates) == (3, 1)


def test_spawn_link_uses_the_call_not_a_result_row_carrying_the_same_id() -> None:
    rows = [
        row("s", message_id="m1", part_type="tool_call", tool_call_id="t1"),
        # A result row in a sibling subagent that (wrongly or not) repeats the id.
        row("s", agent_id="other", attributes=spawned("t0"), message_id="m0",
            part_type="tool_result", tool_call_id="t1"),
        row("s", message_id="mt", part_type="tool_call", tool_call_id="t0"),
        row("s", agent_id="child", attributes=spawned("t1"), message_id="m2"),
    ]
    p = run(rows)
    assert edges(p, "PARENT_THREAD") == {(thread("s", "child"), thread("s")),
                                         (thread("s", "other"), thread("s"))}


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
@pytest.mark.parametrize("encoded", [False, True])
def test_blank_ids_are_no_ids(blank: str, encoded: bool) -> None:
    """"" or whitespace in agent_id/conversation_id/parent_thread_id is no id: a
    blank-agent row is the main loop, not a subagent named "", and a blank
    parent makes no PARENT_THREAD edge. Parquet's dictionary columns too."""
    c = load_contract()
    rows = [row("s-blank", message_id="m1"),
            row("s-blank", message_id="m2", agent_id=blank, conversation_id=blank,
                parent_thread_id=blank, model=blank, tool_name=blank)]
    t = table(rows)
    if encoded:
        t = t.set_column(t.schema.get_field_index("agent_id"), "agent_id",
                         t.column("agent_id").dictionary_encode())
    p = project(c, tag_rows(conform(c, t, "<test>"), "<test>"))
    assert list(nodes(p, "Thread")) == [thread("s-blank")]  # one thread: the main loop

    def count(kind: dict[str, object], name: str) -> int:
        table = kind.get(name)
        return 0 if table is None else table.table.num_rows  # type: ignore[attr-defined]

    assert count(p.graph.nodes, "Agent") == 0
    assert count(p.graph.nodes, "Model") == 0
    assert count(p.graph.nodes, "Tool") == 0
    assert count(p.graph.edges, "PARENT_THREAD") == 0


def test_blank_is_null_only_for_text_columns() -> None:
    from graphkit.contract.model import InputColumn
    with pytest.raises(ValueError, match="string columns only"):
        InputColumn(type="int", blank_is_null=True)
