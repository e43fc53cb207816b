import uuid

import pytest

from graphkit.core.ids import NODE_ID_RECIPE, bernstein_session_id, node_id, node_ids


@pytest.mark.parametrize(
    ("conversation_id", "adapter", "expected"),
    [
        ("conv-1", "codex", "9856177f-240e-59dd-b924-eea87f1cdd49"),
        ("conv-1", "claude", "b19021e8-3303-540b-b04b-fb960463e3c1"),
        ("conv-2", "codex", "5f5ebde0-9cce-5945-a561-2e5f794c8b91"),
    ],
)
def test_bernstein_vectors(conversation_id: str, adapter: str, expected: str) -> None:
    assert bernstein_session_id(conversation_id, adapter) == expected


def test_bernstein_ids_are_v5_rfc4122() -> None:
    u = uuid.UUID(bernstein_session_id("conv-9", "codex"))
    assert u.version == 5
    assert u.variant == uuid.RFC_4122


def test_node_ids_are_stable_and_distinct() -> None:
    a = node_id("Thread", ["s-1", None])
    assert a == node_id("Thread", ["s-1", None])
    assert uuid.UUID(a).version == 5
    # Null and empty key parts differ; so do types and part boundaries.
    assert a != node_id("Thread", ["s-1", ""])
    assert node_id("Session", ["s-1"]) != node_id("Thread", ["s-1"])
    assert node_id("Thread", ["ab", "c"]) != node_id("Thread", ["a", "bc"])
    assert NODE_ID_RECIPE == 1


def test_batch_ids_match_single_ids() -> None:
    keys = [["s-1", None], ["s-2", "agent"], ["x", ""]]
    assert node_ids("Thread", keys) == [node_id("Thread", k) for k in keys]


def test_projection_ids_match_recipe() -> None:
    from graphkit.pipeline import example_graph

    g = example_graph()
    sessions = g.nodes["Session"].table.to_pylist()
    for s in sessions:
        assert s["id"] == node_id("Session", [s["session_id"]])
    for t in g.nodes["Thread"].table.to_pylist():
        assert t["id"] == node_id("Thread", [t["thread_scope"], t["agent_id"]])
