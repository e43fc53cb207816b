"""Identity checks (``graphkit.projection.checks``): what they find comes from the
contract's reject rules and lineage section, not from built-in names."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from graphkit.contract.loader import load_contract
from graphkit.projection.checks import check_rows, unchecked
from graphkit.projection.conform import conform
from tests.helpers.contracts import contract_from
from tests.helpers.rows import identity_cases, row, table


def findings(rows: list[dict]) -> dict[str, list[dict]]:
    c = load_contract()
    out: dict[str, list[dict]] = {}
    for f in check_rows(c, conform(c, table(rows), "<t>")):
        out.setdefault(f.check, []).append(f.to_json())
    return out


def test_default_contract_finds_each_identity_problem() -> None:
    rows = identity_cases()
    rows.append(dict(rows[2], session_id="other-session", message_id="x", part_id="x:0"))
    rows.append(dict(rows[4], session_id="s10", message_id="w", part_id="w:0"))
    rows.append(dict(rows[0], session_id="s9", conversation_id="t9", parent_thread_id="ghost",
                     message_id="y", part_id="y:0"))
    rows.append(row("s", agent_id="zz", attributes=json.dumps(
        {"claude": {"spawned_by_tool_use_id": "never"}})))
    rows.append(dict(rows[0], schema_version=5, message_id="z", part_id="z:0"))
    found = findings(rows)
    assert set(found) == {"null-session", "pre-split-schema", "agent-in-two-sessions",
                          "thread-in-two-sessions", "missing-parent"}
    assert found["null-session"][0]["count"] == 1
    assert found["pre-split-schema"][0]["count"] == 1
    (agent,) = found["agent-in-two-sessions"]
    assert agent["examples"] == [{"agent_id": "agentA",
                                  "sessions": [rows[0]["session_id"], "other-session"]}]
    (thread,) = found["thread-in-two-sessions"]
    assert thread["examples"][0]["sessions"] == [rows[4]["session_id"], "s10"]
    assert sorted(e for f in found["missing-parent"] for e in map(json.dumps, f["examples"])) \
        == [json.dumps({"parent_thread_id": "ghost"}), json.dumps({"spawned_by": "never"})]


def test_self_parent_and_cycles() -> None:
    found = findings([row("s", conversation_id="a", parent_thread_id="b", message_id="1"),
                      row("s", conversation_id="b", parent_thread_id="a", message_id="2"),
                      row("s", conversation_id="c", parent_thread_id="c", message_id="3")])
    loops, cycles = found["cycle"]
    assert loops["count"] == 1
    assert sorted(cycles["examples"][0]["threads"]) == ["a", "b"]


def test_clean_rows_have_no_findings() -> None:
    rows = identity_cases()[:-1]  # without the row that has no session
    assert findings(rows) == {}
    assert unchecked(load_contract()) == []


NO_LINEAGE = """\
contract: repos
version: 1
input:
  repo: {type: string}
  owner: {type: string}
reject:
  - when: {is_null: [owner]}
    reason: a repo needs an owner
    check: ownerless
  - when: {equals: {repo: tmp}}
    reason: scratch repos are not graphed
nodes:
  - type: Repo
    key: [repo]
  - type: Owner
    key: [owner]
edges:
  - type: OWNS
    from: {type: Owner, key: [owner]}
    to: {type: Repo, key: [repo]}
"""


def test_a_contract_without_lineage_gets_its_named_reject_rules_only(tmp_path: Path) -> None:
    c = contract_from(tmp_path, NO_LINEAGE)
    rows = pa.table({"repo": ["a", "b", "tmp"], "owner": ["o", None, None]})
    (f,) = check_rows(c, conform(c, rows, "<t>"))
    assert (f.check, f.count) == ("ownerless", 2)
    assert "a repo needs an owner" in f.message
    (note,) = unchecked(c)
    assert "lineage" in note and "repos" in note
