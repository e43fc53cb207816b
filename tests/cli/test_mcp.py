"""``graphkit mcp`` driven through the MCP SDK's own stdio client, one real server
process for the module: every tool's ``structuredContent`` equals what the command
line prints with ``--json`` for the same question over the same snapshot, and bad
arguments or unknown ids are tool errors carrying the command's one-line message."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp  # the `mcp` extra, installed by `.[dev]`: its absence fails, never skips
import pytest
from click.testing import CliRunner

import graphkit
from graphkit.cli import cli
from tests.helpers.paths import REPO

PAGE = 7  # small, so the fixture's 50 sessions take several pages


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sample rows with subagents and usage, real transcripts with touched files and a
    continuation, and the shaped fixtures: 50 sessions or more."""
    out = tmp_path_factory.mktemp("mcp") / "graph"
    res = CliRunner().invoke(cli, ["-q", "build", str(REPO / "samples" / "rows"),
                                   str(REPO / "tests/fixtures/transcripts/claude-code-log"),
                                   str(REPO / "tests/fixtures/shaped"), "--snapshot", str(out)])
    assert res.exit_code == 0, res.output
    return out


class Client:
    """A synchronous face on one MCP client session (run on a portal's event loop)."""

    def __init__(self, portal: Any, session: Any) -> None:
        self.portal, self.session = portal, session

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        return self.portal.call(self.session.call_tool, tool, args)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.session, name)
        return lambda *a: self.portal.call(method, *a)


@asynccontextmanager
async def _connected(params: Any) -> AsyncIterator[Any]:
    async with mcp.stdio_client(params) as (read, write), \
            mcp.ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.fixture(scope="module")
def client(snapshot: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    from anyio.from_thread import start_blocking_portal

    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "graphkit", "mcp", "--snapshot", str(snapshot), "--page", str(PAGE)],
        # The SDK passes the server a minimal environment: name what graphkit reads.
        env={"PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
             "GRAPHKIT_HOME": str(tmp_path_factory.mktemp("home"))})
    with start_blocking_portal() as portal, \
            portal.wrap_async_context_manager(_connected(params)) as session:
        yield Client(portal, session)


def cli_json(*argv: str) -> list[Any]:
    res = CliRunner().invoke(cli, [*argv, "--json"])
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in res.stdout.splitlines()]


def cli_error(*argv: str) -> str:
    res = CliRunner().invoke(cli, [*argv, "--json"])
    assert res.exit_code == 2, res.output
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("Error: ")
    return line.removeprefix("Error: ")


def answer(client: Client, tool: str, args: dict[str, Any]) -> Any:
    res = client.call(tool, args)
    assert not res.is_error, res.content
    # The text block is what the command prints: one record a line.
    records = res.structured_content.get("records", [res.structured_content])
    assert res.content[0].text == "\n".join(json.dumps(r) for r in records)
    return res.structured_content


def every_session(snapshot: Path) -> list[str]:
    return [r["session_id"] for r in cli_json("sessions", "--snapshot", str(snapshot))]


@pytest.mark.slow
def test_tools_are_read_only_and_say_their_output(client: Client) -> None:
    tools = {t.name: t for t in client.list_tools().tools}
    assert set(tools) == {"sessions", "lineage", "tree", "usage", "files"}
    for t in tools.values():
        a = t.annotations
        assert (a.read_only_hint, a.idempotent_hint, a.open_world_hint,
                a.destructive_hint) == (True, True, False, False), t.name
        assert t.output_schema["type"] == "object", t.name
        assert t.input_schema["additionalProperties"] is False, t.name
    assert tools["lineage"].input_schema["required"] == ["id"]
    assert tools["tree"].input_schema["required"] == ["session_id"]
    # usage's `by` takes every grouping `graphkit usage --by` takes (not `thread`: the
    # tool without `by` already answers per thread, as `usage --json` does).
    by = next(p for p in cli.commands["usage"].params if p.name == "by")
    enum = tools["usage"].input_schema["properties"]["by"]["enum"]
    assert enum == list(graphkit.GROUPINGS) and set(enum) == set(by.type.choices) - {"thread"}


def _all_pages(client: Client, args: dict[str, Any]) -> list[Any]:
    records, cursor, pages = [], None, 0
    while True:
        page = answer(client, "sessions", {**args, **({"cursor": cursor} if cursor else {})})
        assert len(page["records"]) <= PAGE
        records += page["records"]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            return records


@pytest.mark.slow
@pytest.mark.parametrize("args, argv", [
    ({}, []),
    ({"limit": 3}, ["--limit", "3"]),
    ({"limit": 20}, ["--limit", "20"]),
    ({"since": "2026-11-21", "until": "2026-11-22"},
     ["--since", "2026-11-21", "--until", "2026-11-22"]),
])
def test_sessions_equal_the_cli(client: Client, snapshot: Path, args: dict[str, Any],
                                argv: list[str]) -> None:
    expected = cli_json("sessions", "--snapshot", str(snapshot), *argv)
    assert expected  # every question has an answer to compare
    assert _all_pages(client, args) == expected


@pytest.mark.slow
def test_sessions_page_through_the_whole_history(client: Client, snapshot: Path) -> None:
    first = answer(client, "sessions", {})
    assert len(first["records"]) == PAGE and first["next_cursor"]
    assert len(_all_pages(client, {})) == len(every_session(snapshot)) >= 50


# A fork: the first continues the second (from tests/fixtures/shaped/codex-fork-*).
FORKED = ["019b3d4e-6071-7c8d-9eaf-203b4c5d6e03", "019b2c3d-4e5f-7a6b-8c9d-0e1f2a3b4c01"]


def _compare_sessions(client: Client, snapshot: Path, session_ids: list[str]) -> int:
    """Compare tree and usage of each session, and lineage of each of its threads, with
    the command line; the number of continuation records compared."""
    continuations = 0
    for sid in session_ids:
        tree = cli_json("tree", sid, "--snapshot", str(snapshot))
        continuations += sum(r["record"] == "continuation" for r in tree)
        assert answer(client, "tree", {"session_id": sid}) == {"records": tree}
        usage = cli_json("usage", sid, "--snapshot", str(snapshot))
        assert answer(client, "usage", {"session_id": sid}) == {"records": usage}
        for user_id in dict.fromkeys(r["id"] for r in tree if r["record"] == "tree"):
            (expected,) = cli_json("lineage", user_id, "--snapshot", str(snapshot))
            assert answer(client, "lineage", {"id": user_id}) == expected
    return continuations


@pytest.mark.slow
def test_tree_usage_and_lineage_equal_the_cli(client: Client, snapshot: Path) -> None:
    listed = cli_json("sessions", "--snapshot", str(snapshot))
    busiest = [r["session_id"] for r in sorted(listed, key=lambda r: -r["agents"])[:3]]
    assert all(r["agents"] >= 5 for r in listed if r["session_id"] in busiest)
    assert _compare_sessions(client, snapshot, busiest + FORKED) == 2  # each side's link


@pytest.mark.slow
def test_every_session_and_thread_equals_the_cli(client: Client, snapshot: Path) -> None:
    assert _compare_sessions(client, snapshot, every_session(snapshot)) >= 2


@pytest.mark.parametrize("by", ["model", "agent-type", None])
def test_usage_of_all_sessions_equals_the_cli(client: Client, snapshot: Path,
                                              by: str | None) -> None:
    argv = ["--by", by] if by else []
    expected = cli_json("usage", "--snapshot", str(snapshot), *argv)
    assert sum(r.get("total", {}).get("output_tokens", 0) for r in expected) or by
    assert answer(client, "usage", {"by": by} if by else {}) == {"records": expected}


@pytest.mark.slow
@pytest.mark.parametrize("args, argv", [
    ({}, []),
    ({"path": "*.rs"}, ["--path", "*.rs"]),
    ({"session_id": "019a0000-1111-7222-8333-444455556666"},
     ["019a0000-1111-7222-8333-444455556666"]),
])
def test_files_equal_the_cli(client: Client, snapshot: Path, args: dict[str, Any],
                             argv: list[str]) -> None:
    expected = cli_json("files", "--snapshot", str(snapshot), *argv)
    assert expected
    assert answer(client, "files", args) == {"records": expected}


@pytest.mark.parametrize("tool, args, argv", [
    ("lineage", {"id": "no-such-id"}, ["lineage", "no-such-id"]),
    ("tree", {"session_id": "no-such-session"}, ["tree", "no-such-session"]),
    ("usage", {"session_id": "no-such-session"}, ["usage", "no-such-session"]),
    ("files", {"session_id": "no-such-session"}, ["files", "no-such-session"]),
    ("sessions", {"since": "next blue moon"}, ["sessions", "--since", "next blue moon"]),
    ("sessions", {"since": "2026-11-22", "until": "2026-11-21"},
     ["sessions", "--since", "2026-11-22", "--until", "2026-11-21"]),
])
def test_unknown_ids_and_bad_values_are_the_cli_s_message(
        client: Client, snapshot: Path, tool: str, args: dict[str, Any],
        argv: list[str]) -> None:
    res = client.call(tool, args)
    assert res.is_error
    assert res.content[0].text == cli_error(*argv, "--snapshot", str(snapshot))


@pytest.mark.parametrize("tool, args, says", [
    ("sessions", {"limit": 0}, "sessions: limit: 0 is less than the minimum of 1"),
    ("sessions", {"limit": "ten"}, "sessions: limit: 'ten' is not of type 'integer'"),
    ("sessions", {"cursor": "not-a-cursor"}, "cursor 'not-a-cursor' is not one this server"),
    ("sessions", {"colour": "red"}, "('colour' was unexpected)"),
    ("lineage", {}, "'id' is a required property"),
    ("usage", {"by": "planet"}, "usage: by: 'planet' is not one of"),
    ("nonesuch", {}, "no tool named 'nonesuch'"),
])
def test_bad_arguments_are_one_line_tool_errors(client: Client, tool: str,
                                                args: dict[str, Any], says: str) -> None:
    res = client.call(tool, args)
    assert res.is_error and res.structured_content is None
    (text,) = [c.text for c in res.content]
    assert says in text and "\n" not in text
    # ... and the server goes on answering.
    assert answer(client, "sessions", {"limit": 1})["records"]


def test_manifest_and_contract_are_resources(client: Client, snapshot: Path) -> None:
    listed = {str(r.uri): r for r in client.list_resources().resources}
    assert set(listed) == {"graphkit://snapshot/manifest.json",
                           "graphkit://snapshot/contract.yaml"}
    manifest = client.read_resource("graphkit://snapshot/manifest.json").contents[0]
    assert manifest.mime_type == "application/json"
    assert json.loads(manifest.text) == json.loads((snapshot / "manifest.json").read_text())
    contract = client.read_resource("graphkit://snapshot/contract.yaml").contents[0]
    assert contract.text == (REPO / "contracts" / "ai-gateway-graph.yaml").read_text()
    with pytest.raises(mcp.MCPError, match="no resource"):
        client.read_resource("graphkit://snapshot/other")


def test_a_folder_that_is_no_snapshot_is_refused_before_serving(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["mcp", "--snapshot", str(tmp_path)], input="")
    assert res.exit_code == 2
    assert str(tmp_path) in res.stderr and len(res.stderr.strip().splitlines()) == 1
