import uuid

import pyarrow as pa
import pytest

from graphkit.core.ids import (
    NODE_ID_RECIPE,
    bernstein_session_id,
    hash_key_texts,
    key_text,
    key_texts,
    node_id,
    node_ids,
    parts_split_back,
)


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
    from graphkit.builds.run import example_graph

    g = example_graph()
    sessions = g.nodes["Session"].table.to_pylist()
    for s in sessions:
        assert s["id"] == node_id("Session", [s["session_id"]])
    for t in g.nodes["Thread"].table.to_pylist():
        assert t["id"] == node_id("Thread", [t["thread_scope"], t["agent_id"]])


# -- the recipe's two forms agree ------------------------------------------------

ODD_KEYS = [
    ["s-1"], ["s-1", None], ["s-1", ""], ["", None], [None, None],
    ["x\x1fy", "z"], ["x", "y\x1fz"], ["\x00", "q"], [None, "q"], ["a\x00", "b"],
    ["ünï", "コード"], ["42", "7"],
]


def test_key_texts_match_key_text_per_row() -> None:
    width = 2
    keys = [k + [None] * (width - len(k)) for k in ODD_KEYS]
    cols = [pa.array([k[i] for k in keys], pa.string()) for i in range(width)]
    assert key_texts(cols, len(keys)).to_pylist() == [key_text(k) for k in keys]


def test_key_texts_of_a_part_that_is_always_null() -> None:
    col = pa.chunked_array([pa.array(["a"]), pa.array(["b"])])
    assert key_texts([col, None], 2).to_pylist() == [key_text(["a", None]),
                                                     key_text(["b", None])]


def test_key_texts_of_non_text_parts_use_their_text() -> None:
    assert key_texts([pa.array([7, None])], 2).to_pylist() == [key_text([7]), key_text([None])]


def test_arrow_ids_match_scalar_ids() -> None:
    for node_type in ("Thread", "Session"):
        texts = pa.array([key_text(k) for k in ODD_KEYS])
        assert hash_key_texts(node_type, texts).to_pylist() == node_ids(node_type, ODD_KEYS)


def test_arrow_ids_of_no_keys() -> None:
    assert hash_key_texts("Thread", pa.array([], pa.string())).to_pylist() == []


def test_an_empty_key_has_no_id() -> None:
    with pytest.raises(ValueError, match="at least one part"):
        node_id("Thread", [])


def test_values_holding_the_separator_or_null_marker_share_key_texts() -> None:
    # Why the projection checks before grouping by key columns.
    assert key_text(["x\x1fy", "z"]) == key_text(["x", "y\x1fz"])
    assert key_text(["\x00"]) == key_text([None])
    assert node_id("K", ["x\x1fy", "z"]) == node_id("K", ["x", "y\x1fz"])


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (pa.array(["a", "b", None]), True),
        (pa.array(["a", "b\x1fc"]), False),
        (pa.array(["a", "\x00"]), False),
        (pa.array(["a\x00"]), True),  # a null marker inside a value is still told apart
        (pa.array([], pa.string()), True),
        (pa.array([1, 2]), False),  # not text: not known
    ],
)
def test_parts_split_back(values: pa.Array, expected: bool) -> None:
    assert parts_split_back(values) is expected
