"""Identity checks on rows, without building a snapshot.

What is checked comes from the contract, so the checks work on any contract:

* every reject rule that names a ``check`` reports the rows it matches under
  that name (the default contract: ``null-session``, ``pre-split-schema``);
* a contract with a ``lineage`` section also gets the lineage checks: a thread
  (or agent) reached from more than one session (``<type>-in-two-sessions``),
  parent links that name nothing (``missing-parent``), and threads that are
  their own parent or ancestor (``cycle``);
* what reading the sources found (:func:`reading_findings`): skipped lines and the
  sources' own findings.

:func:`unchecked` says what a contract's shape leaves out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.contract.expr import any_valid, filter_mask
from graphkit.contract.loader import LoadedContract
from graphkit.contract.spec import EdgeRule, LineageSpec
from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, GraphTables
from graphkit.core.ids import key_texts
from graphkit.core.schema import FILE_COL, ROW_COL
from graphkit.projection.groups import decoded, single
from graphkit.projection.project import Projection, derive, project
from graphkit.sources.read import SourceRows
from graphkit.sources.transcripts.drift import drift_finding, unknown_records

SAMPLE = 5  # examples listed per finding


@dataclass
class Finding:
    """One problem found, with a few examples of where."""

    check: str
    count: int
    message: str
    examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def warning(self) -> bool:
        """Whether this is a warning (what was read, not who is whose: lines skipped,
        text repaired) rather than an identity problem. ``graphkit check`` exits 1 only
        for identity problems: a record type a newer Claude Code writes must not fail a
        user's CI.

        >>> Finding("skipped-lines", 2, "").warning, Finding("cycle", 1, "").warning
        (True, False)
        """
        return self.check in WARNINGS

    def to_json(self) -> dict[str, Any]:
        """The finding as printed by ``graphkit check --json``."""
        return {"check": self.check, "count": self.count, "message": self.message,
                "examples": self.examples,
                "severity": "warning" if self.warning else "problem"}


# Findings about what was read rather than about identity: lines no reader knows (a
# future record type), text made valid (lone surrogates, invalid UTF-8).
WARNINGS = frozenset({"skipped-lines", "lone-surrogate", "invalid-utf8"})


def reading_findings(rows: SourceRows) -> list[Finding]:
    """What reading the sources found, as findings: lines skipped (the same ones a build
    skips, so ``check`` and ``build`` agree) and the sources' own findings (e.g. Claude
    subagents with no spawning call, or whose session transcript is missing)."""
    out = []
    if rows.skipped:
        n = len(rows.skipped)
        out.append(Finding("skipped-lines", n, f"{n} transcript line(s) or file(s) gave no "
                           "rows (line 0: the whole file)", [
                               {"file": s["path"], "line": s["line"], "reason": s["reason"]}
                               for s in rows.skipped[:SAMPLE]]))
    out.extend(Finding(f["check"], f["count"], f["message"], f["examples"])
               for f in rows.findings)
    drift = drift_finding(unknown_records(rows.skipped))
    if drift is not None:
        out.append(Finding(drift["check"], drift["count"], drift["message"],
                           drift["examples"]))
    return out


def unchecked(contract: LoadedContract) -> list[str]:
    """Notes on what ``check_rows`` cannot check for this contract (empty: nothing left out)."""
    if contract.spec.lineage is None:
        return [f"the contract {contract.name} declares no `lineage:` section, so sessions, "
                "parents and cycles are not checked; only its named reject rules are"]
    return []


def check_rows(contract: LoadedContract, rows: pa.Table) -> list[Finding]:
    """All identity problems in ``rows`` (as read by ``read_sources``)."""
    # read_sources keeps Parquet text dictionary-encoded; the checks below
    # (is_in, unique, distinct lists) read values, and are not on a hot path.
    derived = decoded(derive(contract, rows))
    out = list(_rule_findings(contract, derived))
    lineage = contract.spec.lineage
    if lineage is not None:
        proj = project(contract, rows)
        rows = derived
        out.extend(_in_two_sessions(proj.graph, lineage))
        out.extend(_missing_parents(contract, rows, proj.graph, lineage))
        out.extend(_cycles(proj, lineage))
    return out


def _where(rows: pa.Table, mask: pa.Array) -> list[dict[str, Any]]:
    if FILE_COL not in rows.column_names:
        return []
    sub = rows.filter(mask).slice(0, SAMPLE)
    return [{"file": f, "row": r} for f, r in zip(
        sub.column(FILE_COL).to_pylist(), sub.column(ROW_COL).to_pylist(), strict=True)]


def _rule_findings(contract: LoadedContract, rows: pa.Table) -> Iterator[Finding]:
    """Rows each named reject rule matches (whether or not an earlier rule also does)."""
    for rule in contract.spec.reject:
        if rule.check is None:
            continue
        mask = filter_mask(rows, rule.when)
        n = pc.sum(mask).as_py() or 0
        if n:
            yield Finding(rule.check, n, f"{n} row(s) rejected: {rule.reason}",
                          _where(rows, mask))


def _column(graph: GraphTables, node_type: str, name: str) -> dict[str, Any]:
    """Node id → the value of one of its columns."""
    t = graph.nodes[node_type].table
    return dict(zip(t.column(NODE_ID).to_pylist(), t.column(name).to_pylist(), strict=True))


def _pairs(graph: GraphTables, edge_type: str | None) -> list[tuple[str, str]]:
    if edge_type is None or edge_type not in graph.edges:
        return []
    t = graph.edges[edge_type].table
    return list(zip(t.column(EDGE_SOURCE).to_pylist(), t.column(EDGE_TARGET).to_pylist(),
                    strict=True))


def _in_two_sessions(graph: GraphTables, lin: LineageSpec) -> Iterator[Finding]:
    """Threads (and agents) reached from more than one session."""
    if lin.session not in graph.nodes or lin.thread not in graph.nodes:
        return
    session_name = _column(graph, lin.session, lin.session_key)
    sessions: dict[str, set[str]] = {}
    for s, t in _pairs(graph, lin.has_thread):
        sessions.setdefault(t, set()).add(session_name[s])
    targets = [(lin.thread, lin.thread_key, sessions)]
    if lin.agent is not None and lin.agent in graph.nodes:
        by_agent: dict[str, set[str]] = {}
        for t, a in _pairs(graph, lin.has_agent):
            by_agent.setdefault(a, set()).update(sessions.get(t, ()))
        agent_key = graph.nodes[lin.agent].key
        targets.append((lin.agent, agent_key[0] if len(agent_key) == 1 else NODE_ID, by_agent))
    for node_type, name_col, found in targets:
        names = _column(graph, node_type, name_col)
        multi = sorted((str(names[n]), sorted(s)) for n, s in found.items() if len(s) > 1)
        if multi:
            yield Finding(f"{node_type.lower()}-in-two-sessions", len(multi),
                          f"{len(multi)} {node_type} node(s) belong to more than one "
                          f"{lin.session} ({lin.session_key})",
                          [{name_col: k, "sessions": v} for k, v in multi[:SAMPLE]])


def _missing_parents(contract: LoadedContract, rows: pa.Table, graph: GraphTables,
                     lin: LineageSpec) -> Iterator[Finding]:
    """Parent references whose target never appears: per rule of the parent edge
    type, a target key no node has, or (a join) a value no row's ``matches`` holds."""
    for rule in contract.spec.edges:
        if rule.type != lin.parent or rule.chain is not None:
            continue
        t = rows.filter(filter_mask(rows, rule.where)) if rule.where is not None else rows
        if rule.join is not None:
            col = rule.join.column
            refs = pc.unique(single(t.column(col)).drop_null())
            known = pc.unique(single(rows.column(rule.join.matches)).drop_null())
            missing = sorted(pc.filter(refs, pc.invert(pc.is_in(refs, value_set=known)))
                             .to_pylist())
            what = f"{col} value(s) name a {rule.join.matches} that no row holds"
            examples = [{col: v} for v in missing[:SAMPLE]]
        else:
            missing, examples = _missing_targets(rule, t, graph)
            cols = ", ".join(k for k in rule.to.key if k is not None)
            what = f"{cols} value(s) name a {rule.to.type} that has no rows"
        if missing:
            yield Finding("missing-parent", len(missing), f"{len(missing)} {what}", examples)


def _missing_targets(rule: EdgeRule, rows: pa.Table,
                     graph: GraphTables) -> tuple[list[Any], list[dict[str, Any]]]:
    """Distinct target keys of ``rule`` in ``rows`` that no node of the target type has."""
    cols = [k for k in rule.to.key if k is not None]
    t = rows.filter(any_valid(rows, cols)).select(cols)
    t = t.group_by(cols, use_threads=False).aggregate([])
    wanted = key_texts([None if k is None else t.column(k) for k in rule.to.key], t.num_rows)
    nodes = graph.nodes.get(rule.to.type)
    if nodes is None:
        have = pa.array([], pa.string())
    else:
        have = key_texts([nodes.table.column(k) for k in nodes.key], nodes.table.num_rows)
    t = t.filter(pc.invert(pc.is_in(wanted, value_set=have)))
    missing = sorted(t.to_pylist(), key=lambda r: [str(r[c]) for c in cols])
    return missing, missing[:SAMPLE]


def _cycles(proj: Projection, lin: LineageSpec) -> Iterator[Finding]:
    """Threads that name themselves as parent, and cycles of parent links."""
    loops = proj.dropped_edges.get(lin.parent, {}).get("self_loop", 0)
    if loops:
        yield Finding("cycle", loops, f"{loops} row(s) link a {lin.thread} to itself "
                                      f"by {lin.parent}")
    pairs = _pairs(proj.graph, lin.parent)
    if not pairs or lin.thread not in proj.graph.nodes:
        return
    names = _column(proj.graph, lin.thread, lin.thread_key)
    cycles = list(nx.simple_cycles(nx.DiGraph(pairs)))
    if cycles:
        yield Finding("cycle", len(cycles), f"{len(cycles)} cycle(s) of {lin.parent} links "
                                            f"among {lin.thread} nodes",
                      [{"threads": [names.get(n, n) for n in c]} for c in cycles[:SAMPLE]])
