"""Inline sidechains: subagent lines written into the main Claude transcript.

Older Claude Code versions (1.x, 2.0.x) wrote a Task/Agent subagent's lines into the main
file, marked ``isSidechain: true``, often without ``agentId``. Lines chained by
``parentUuid`` are one subagent run; which main-loop call spawned it is decided, in order:

1. **prompt**: the chain's first user prompt equals the ``input.prompt`` of exactly one
   Task/Agent call (or the ``toolUseResult.prompt`` its result echoes);
2. **timing**: exactly one call is open (called, its result not yet back) when the chain
   starts — among the prompt's candidates when several calls share that prompt;
3. **order**: calls sharing the chain's prompt, none singled out by timing, are paired with
   such chains in order of time (identical prompts are interchangeable).

A chain no rule places stays an orphan with an id of its own, ``sidechain-<first uuid>``,
and is reported: guessing between parallel calls would invent lineage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec

OPEN = 2**62  # a spawn call whose result never came: its window stays open


def synthetic_id(*parts: object) -> str:
    """A stable made-up id from ``parts`` (for lines that carry none).

    >>> synthetic_id("s1", 7) == synthetic_id("s1", 7) != synthetic_id("s2", 7)
    True
    """
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:16]


class SideLine(NamedTuple):
    """An inline sidechain line of a main file, and the rows it gave."""

    session: str
    line: int
    uuid: str | None
    parent: Any            # ``parentUuid`` as written
    agent: str | None      # ``agentId``, when the line names it
    ts: int
    prompt: str | None     # the text of a user line
    first_row: int
    end_row: int


@dataclass(slots=True)
class Spawn:
    """A main-loop Task/Agent call: when it ran, when its result came, its prompt(s)."""

    ts: int
    result_ts: int = OPEN
    prompts: set[str] = field(default_factory=set)


class Chain(msgspec.Struct):
    """One inline subagent run: its agent id, spawning call (None: an orphan) and rows."""

    session: str
    line: int              # where it starts
    agent: str
    call: str | None       # the spawning call placed by the rules (None if not placed)
    orphan: bool           # neither an agent named on its lines nor a call found
    rows: list[int]


def _chains(lines: list[SideLine]) -> dict[int, list[int]]:
    """Lines grouped by the chain they belong to (keyed by the chain's first line)."""
    by_uuid = {side.uuid: i for i, side in enumerate(lines) if side.uuid}

    def root(i: int) -> int:
        seen = set()
        while True:
            p = lines[i].parent
            j = by_uuid.get(p) if isinstance(p, str) else None
            if j is None or j in seen:
                return i
            seen.add(j)
            i = j

    chains: dict[int, list[int]] = {}
    for i in range(len(lines)):
        chains.setdefault(root(i), []).append(i)
    return chains


def _spawning_calls(starts: dict[int, tuple[int, str | None]],
                    spawns: dict[str, Spawn]) -> dict[int, str]:
    """Chain head → spawning call, by the rules in the module docstring."""
    found: dict[int, str] = {}
    shared: dict[int, list[str]] = {}   # chains whose prompt several calls share
    for head, (_, prompt) in sorted(starts.items(), key=lambda kv: kv[1][0]):
        same = [c for c, s in spawns.items() if prompt is not None and prompt in s.prompts]
        if len(same) == 1 and same[0] not in found.values():
            found[head] = same[0]
        elif len(same) > 1:
            shared[head] = same
    for head, (start, _) in sorted(starts.items(), key=lambda kv: kv[1][0]):
        if head in found:
            continue
        open_calls = [c for c in shared.get(head, spawns)
                      if spawns[c].ts <= start <= spawns[c].result_ts]
        if len(open_calls) > 1:
            open_calls = [c for c in open_calls if c not in found.values()]
        if len(open_calls) == 1:
            found[head] = open_calls[0]
    for head, calls in shared.items():
        if head not in found:
            start = starts[head][0]
            free = sorted((spawns[c].ts, c) for c in calls
                          if c not in found.values() and spawns[c].ts <= start)
            if free:
                found[head] = free[0][1]
    return found


def inline_chain_agents(lines: list[SideLine], spawns: dict[str, Spawn],
                        link_of_call: dict[str, str]) -> Iterator[Chain]:
    """Each inline chain with the agent its rows belong to and, when found, its call.

    A chain naming an agent keeps it (its link comes from the result naming that agent);
    a placed chain takes the agent its call's result names, else ``sidechain-<call>``.
    """
    chains = _chains(lines)
    named = {head: next((lines[i].agent for i in members if lines[i].agent), None)
             for head, members in chains.items()}
    starts = {}
    for head, members in chains.items():
        if named[head] is None:
            by_time = sorted(members, key=lambda i: lines[i].ts)
            prompt = next((lines[i].prompt for i in by_time if lines[i].prompt is not None),
                          None)
            starts[head] = (lines[by_time[0]].ts, prompt)
    calls = _spawning_calls(starts, spawns)
    for head, members in chains.items():
        rows = [r for i in members for r in range(lines[i].first_row, lines[i].end_row)]
        first = lines[head]
        agent, call = named[head], calls.get(head)
        if agent is None and call is not None:
            agent = link_of_call.get(call) or f"sidechain-{call}"
        elif agent is None:
            # Without a uuid, a made-up id: scoped by session, so never shared.
            agent = f"sidechain-{first.uuid or synthetic_id(first.session, first.line)}"
        placed = call if named[head] is None else None
        yield Chain(first.session, first.line, agent, placed,
                    named[head] is None and call is None, rows)
