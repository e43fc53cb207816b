"""The partial graphs of :mod:`graphkit.builds.incremental.splice`: projected, stored, merged.

A group's partial is one file of Arrow IPC streams (each node and edge type's partial
table, then the rejects), named in the splice state with what the group's read and
projection reported (counts, skipped lines, fingerprints, findings, the files and how
many rows each gave).
"""

from __future__ import annotations

import secrets
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.builds.incremental.merged import (
    Merged,
    changed_groups,
    pack_account,
    same_files,
    splice_type,
    split_account,
    unchanged,
)
from graphkit.builds.incremental.merged import save as save_merged
from graphkit.builds.partitioned.merge import check_spans, merge_parts, unify
from graphkit.builds.partitioned.partition import PartOutput, project_partition
from graphkit.builds.partitioned.plan import ORD, Plan
from graphkit.core.schema import ROW_COL

if TYPE_CHECKING:
    from graphkit.contract.loader import LoadedContract
    from graphkit.projection.project import Projection
    from graphkit.sources.read import SourceRows
    from graphkit.sources.transcripts.read import TranscriptRows

_LOW = (1 << 32) - 1
_CODEX = 1 << 62
_FILE_BITS = (1 << 30) - 1


class PartUnreadable(Exception):
    """A stored partial graph is missing or damaged (its group is projected again)."""

    def __init__(self, bucket: int, why: str) -> None:
        super().__init__(why)
        self.bucket = bucket


def _local_positions(rows: TranscriptRows) -> np.ndarray:
    """Each row's input position within its group: (Codex, file, row in file), so that
    the merge can make it global whatever other groups hold."""
    table = rows.table
    owner = np.asarray(rows.row_file, dtype=np.int64)
    n = len(owner)
    if not n:
        return np.zeros(0, np.int64)
    codex = pc.equal(table.column("client_name"), "codex").to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.concatenate([[True], owner[1:] != owner[:-1]]))
    first = np.repeat(starts, np.diff(np.concatenate([starts, [n]])))
    offset = np.arange(n, dtype=np.int64) - first
    return np.where(codex, _CODEX, 0) | (owner << 32) | offset


def project_group(plan: Plan, contract: LoadedContract, rows: TranscriptRows, label: str,
                  granularity: str, include_content: bool) -> tuple[PartOutput, dict[str, Any]]:
    """Project one group's linked rows (conformed as the whole build conforms them)."""
    from graphkit.projection.conform import combine_dictionaries, conform_table, read_spec
    from graphkit.sources.read import computed_columns

    spec = read_spec(contract, include_content)
    local = _local_positions(rows)
    owner = np.asarray(rows.row_file, dtype=np.int64)
    table = combine_dictionaries(conform_table(contract, computed_columns(rows.table, spec),
                                               label))
    at = table.schema.get_field_index(ROW_COL)
    table = table.set_column(at, ROW_COL, pa.array(local, table.schema.field(at).type))
    table = table.append_column(ORD, pa.array(local, pa.int64()))
    sessions = pc.count_distinct(rows.table.column("session_id")).as_py()
    # The parse's kind, not the rows': a rollout whose every row was left out at
    # conversion has none, and its skipped lines go with the Codex files' (_account).
    codex_files = rows.file_codex
    # Link groups are closed under the links between sessions (splice.py): an edge's end
    # missing from its group is missing from every group, so it is counted here.
    out = project_partition(plan, table, granularity=granularity,
                            include_content=include_content, unresolved=False)
    info = {
        "files": rows.files,
        "file_rows": np.bincount(owner, minlength=len(rows.files)).tolist(),
        "codex": codex_files,
        "sessions": sessions,
        "skipped": [[s.path, s.line, s.reason] for s in rows.skipped],
        "bad_from": rows.bad_from,
        "fingerprints": rows.fingerprints,
        "fingerprint_files": rows.fingerprint_files,
        "findings": rows.findings,
        "agents": rows.agents,
        "counts": out.counts,
    }
    return out, info


def save_part(folder: Path, bucket: int, out: PartOutput, info: dict[str, Any]) -> dict[str, Any]:
    """Write a group's account, partial tables and rejects as one file: an 8-byte length,
    the account as zstd'd JSON (naming where each table's IPC stream starts), then the streams."""
    from graphkit.sources.transcripts.index import atomic_write

    options = pa.ipc.IpcWriteOptions(compression="lz4")
    chunks: list[bytes] = []
    tables: list[list[Any]] = []
    at = 0
    for (kind, type_), table in [*out.tables.items(), (("rejects", ""), out.rejects)]:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema, options=options) as w:
            w.write_table(table)
        data = sink.getvalue().to_pybytes()
        tables.append([kind, type_, at, len(data)])
        chunks.append(data)
        at += len(data)
    name = f"part-{bucket:02d}-{secrets.token_hex(6)}.arrow"
    info = {**info, "file": name, "tables": tables}
    payload = b"".join([pack_account(info), *chunks])
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / name, lambda fh: fh.write(payload))
    return info


_READ: dict[Path, tuple[dict[str, Any], pa.Buffer]] = {}  # read once per build


def _read_part(folder: Path, bucket: int, name: str) -> tuple[dict[str, Any], pa.Buffer]:
    got = _READ.pop(folder / name, None)  # the account was read first, the tables next
    if got is not None:
        return got
    try:
        return split_account((folder / name).read_bytes(), name)
    except (OSError, ValueError, UnicodeDecodeError, msgspec.DecodeError) as exc:
        raise PartUnreadable(bucket, f"{type(exc).__name__}: {exc}") from exc


def forget_reads() -> None:
    """Drop the part files read for this build (see :func:`load_info`)."""
    _READ.clear()


def load_info(folder: Path, bucket: int, ref: dict[str, Any]) -> dict[str, Any]:
    """A stored group's account (what its read and projection reported)."""
    name = str(ref.get("file"))
    info, buf = _read_part(folder, bucket, name)
    _READ[folder / name] = (info, buf)
    return info


def _load(folder: Path, bucket: int, part: dict[str, Any],
          only: set[tuple[str, str]] | None = None) -> dict[tuple[str, str], pa.Table]:
    """A partial's tables (``only`` these and the rejects, when given)."""
    _, buf = _read_part(folder, bucket, part["file"])
    return _streams(bucket, part, buf, only)


def _streams(bucket: int, part: dict[str, Any], buf: pa.Buffer,
             only: set[tuple[str, str]] | None) -> dict[tuple[str, str], pa.Table]:
    try:
        out = {}
        for kind, type_, at, size in part["tables"]:
            if only is not None and kind != "rejects" and (kind, type_) not in only:
                continue
            if at < 0 or at + size > buf.size:
                raise ValueError("outside the file")
            out[(kind, type_)] = pa.ipc.open_stream(buf.slice(at, size)).read_all()
        return out
    # OSError: pyarrow's ArrowIOError, which a damaged compressed buffer raises.
    except (ValueError, KeyError, TypeError, OSError, pa.ArrowException) as exc:
        raise PartUnreadable(bucket, f"{type(exc).__name__}: {exc}") from exc


def _globalize(values: pa.ChunkedArray | pa.Array, bases: np.ndarray) -> pa.Array:
    """Local positions (see :func:`_local_positions`) as positions in the whole build."""
    v = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    v = v.cast(pa.int64())
    # numpy: one call per step instead of Arrow's per-call cost (17 partials × columns).
    nulls = v.is_null().to_numpy(zero_copy_only=False) if v.null_count else None
    a = (v.fill_null(0) if nulls is not None else v).to_numpy()
    out = bases[(a >> 32) & _FILE_BITS] + (a & _LOW)
    return pa.array(out, pa.int64(), mask=nulls)


def _bases(files: list[str], parts: dict[int, dict[str, Any]]) -> dict[int, np.ndarray]:
    """For each group's files, the position of its first row in the whole build: Claude
    rows first, then Codex, each in file order. (One numpy sort of all files' keys: a
    sort of (codex, rank, group, index) tuples in Python cost ~10 ms for 6k files.)"""
    rank = {p: i for i, p in enumerate(files)}
    groups = list(parts)
    codex, ranks, rows, group, index = [], [], [], [], []
    for b in groups:
        part = parts[b]
        names, counts, kinds = part["files"], part["file_rows"], part["codex"]
        if not len(names) == len(counts) == len(kinds):
            raise ValueError("a partial's file lists differ in length")
        codex.append(np.array(kinds, dtype=bool))
        ranks.append(np.array([rank[p] for p in names], dtype=np.int64))
        rows.append(np.array(counts, dtype=np.int64))
        group.append(np.full(len(names), b, dtype=np.int64))
        index.append(np.arange(len(names), dtype=np.int64))
    if not groups:
        return {}
    cat = [np.concatenate(a) for a in (codex, ranks, rows, group, index)]
    order = np.lexsort((cat[4], cat[3], cat[1], cat[0]))  # the last key sorts first
    starts = np.empty(len(order), dtype=np.int64)
    starts[order] = np.concatenate([[0], np.cumsum(cat[2][order])[:-1]])
    cuts = np.cumsum([len(a) for a in index])[:-1]
    return dict(zip(groups, np.split(starts, cuts), strict=True))


def _global_keys(plan: Plan, t: pa.Table, bases: np.ndarray) -> pa.Table:
    """The order-key columns holding input positions, made global."""
    last = f"__{len(plan.order_by)}"
    for i, name in enumerate(t.column_names):
        if name.startswith(("__gk_first_", "__gk_last_")) and name.endswith(last):
            t = t.set_column(i, name, _globalize(t.column(i), bases))
    return t


def load_parts(plan: Plan, folder: Path, files: list[str], parts: dict[int, dict[str, Any]],
               only: set[tuple[str, str]] | None = None,
               ) -> tuple[dict[int, dict[tuple[str, str], pa.Table]], list[pa.Table]]:
    """Every group's partial tables (``only`` these, when given) and rejects, input
    positions made global."""
    bases = _bases(files, parts)
    loaded, rejects = {}, []
    for b, part in parts.items():
        tables = _load(folder, b, part, only)
        rej = tables.pop(("rejects", ""), None)
        if rej is not None and rej.num_rows:
            rej = rej.set_column(rej.schema.get_field_index(ORD), ORD,
                                 _globalize(rej.column(ORD), bases[b]))
            at = rej.schema.get_field_index(ROW_COL)
            rej = rej.set_column(at, ROW_COL, pc.add(_globalize(rej.column(ROW_COL), bases[b]),
                                                     1).cast(rej.schema.field(at).type))
        if rej is not None:
            rejects.append(rej)
        loaded[b] = {k: _global_keys(plan, t, bases[b]) for k, t in tables.items()}
    return loaded, rejects


def _types(parts: dict[int, dict[str, Any]]) -> list[tuple[str, str]]:
    """The node and edge types of all partials, in the order they come in them."""
    types: list[tuple[str, str]] = []
    for part in parts.values():
        types += [(str(k), str(t)) for k, t, _at, _size in part["tables"]
                  if k != "rejects" and (k, t) not in types]
    return types


def _tables_of(folder: Path, bucket: int, name: str, want: set[tuple[str, str]]
               ) -> dict[tuple[str, str], pa.Table] | None:
    """Some tables of a partial file as stored (positions local), None when unreadable."""
    try:
        info, buf = _read_part(folder, bucket, name)
        _READ[folder / name] = (info, buf)  # load_parts takes it from there
        return {k: t for k, t in _streams(bucket, info, buf, want).items() if k in want}
    except PartUnreadable:
        return None


def _raw_streams(folder: Path, bucket: int, name: str
                 ) -> dict[tuple[str, str], pa.Buffer] | None:
    """Each table's stream of a partial file as stored (not decoded), None when
    unreadable."""
    try:
        info, buf = _read_part(folder, bucket, name)
        _READ[folder / name] = (info, buf)  # load_parts takes it from there
        out = {}
        for kind, type_, at, size in info["tables"]:
            if not (isinstance(at, int) and isinstance(size, int)
                    and at >= 0 and size >= 0 and at + size <= buf.size):
                return None
            out[(str(kind), str(type_))] = buf.slice(at, size)
        return out
    except (PartUnreadable, ValueError, KeyError, TypeError):
        return None


def _merged_tables(plan: Plan, folder: Path, files: list[str],
                   parts: dict[int, dict[str, Any]], kept_from: Merged | None,
                   notes: list[str]) -> tuple[dict[tuple[str, str], pa.Table], list[pa.Table],
                                              dict[str, list[str]]]:
    """Each type's merged table (the stored one where nothing it depends on changed, see
    :mod:`graphkit.builds.incremental.merged`), every group's rejects, and the previous
    snapshot's files of the types kept (:func:`same_files`)."""
    types = _types(parts)
    kept: dict[tuple[str, str], pa.Table] = {}
    if kept_from is not None:
        if kept_from.problem:
            notes.append(kept_from.problem)
        alike = unchanged(kept_from, types, parts,
                          lambda b, name, want: _tables_of(folder, b, name, want),
                          lambda b, name: _raw_streams(folder, b, name))
        try:
            kept = {t: kept_from.table(t) for t in types if t in alike}
        except (ValueError, OSError, pa.ArrowException) as exc:
            notes.append(f"stored merged graph unreadable ({type(exc).__name__}); merged again")
            kept = {}
    spliced = _spliced(plan, folder, parts, kept_from, [t for t in types if t not in kept],
                       notes) if kept_from is not None and kept_from.usable else {}
    loaded, rejects = load_parts(plan, folder, files, parts,
                                 only={t for t in types if t not in kept and t not in spliced})
    out, shared = {}, {}
    for key in types:
        if key in kept or key in spliced:
            out[key] = kept[key] if key in kept else spliced[key]
            continue
        tabs = [t[key] for t in loaded.values() if key in t]
        found: list[pa.Array] = []
        schema = unify([t.schema for t in tabs], plan.types[key].columns)
        out[key] = merge_parts(plan, plan.types[key], tabs, schema, found)
        shared[key] = found[0]
    for key in spliced:  # the keys it replaced were held once: the shared ones stand
        if kept_from is not None and key in kept_from.shared_at:
            shared[key] = kept_from.shared(key)
    same = same_files(kept_from, list(kept)) if kept_from is not None else {}
    if kept_from is not None and (len(kept) < len(types) or not kept_from.usable or {
            b: p["file"] for b, p in parts.items()} != kept_from.before):
        save_merged(kept_from, parts, out, set(kept), shared)
    return out, rejects, same


def _spliced(plan: Plan, folder: Path, parts: dict[int, dict[str, Any]], merged: Merged,
             types: list[tuple[str, str]], notes: list[str]) -> dict[tuple[str, str], pa.Table]:
    """The changed types whose new merged table is last time's with the rows of the groups
    read again replaced (:func:`splice_type`): not loaded from every partial and merged."""
    want = {t for t in types if t in merged.tables and t in merged.shared_at}
    groups = changed_groups(merged, parts)
    if not want or not groups:
        return {}
    pairs: dict[int, tuple[Any, Any]] = {}
    for b in groups:
        old = _tables_of(folder, b, merged.before[b], want) if b in merged.before else {}
        new = _tables_of(folder, b, str(parts[b]["file"]), want) if b in parts else {}
        if old is None or new is None:
            return {}
        pairs[b] = (old, new)
    out = {}
    try:
        for t in sorted(want):
            for _o, n in pairs.values():  # a distinct count's rows checked as a merge would
                if n.get(t) is not None:
                    check_spans(plan, plan.types[t], n[t])
            got = splice_type(t[0], merged.table(t), merged.shared(t),
                              [(o.get(t), n.get(t)) for o, n in pairs.values()])
            if got is not None:
                out[t] = got
    except (ValueError, OSError, pa.ArrowException) as exc:
        notes.append(f"stored merged graph unreadable ({type(exc).__name__}); merged again")
        return {}
    return out


def assemble(plan: Plan, contract: LoadedContract, files: list[str],
             parts: dict[int, dict[str, Any]], granularity: str, folder: Path,
             kept_from: Merged | None = None, notes: list[str] | None = None,
             ) -> tuple[Projection, SourceRows, dict[str, int]]:
    """The groups' partials merged into the build's graph and account; subagent threads
    by kind. ``kept_from``: the last build's merged tables, taken for the types whose
    partials did not change (and this build's stored there)."""
    from graphkit.contract.loader import lineage_vocabulary
    from graphkit.core.graph import EdgeTable, GraphTables, NodeTable
    from graphkit.core.ids import NODE_ID_RECIPE
    from graphkit.projection.project import Projection
    from graphkit.snapshot.write import SAME_FILES

    tables, rejects, same = _merged_tables(plan, folder, files, parts, kept_from,
                                           notes if notes is not None else [])
    counts = [p["counts"] for p in parts.values()]
    graph = GraphTables(contract.name, contract.version, NODE_ID_RECIPE, granularity,
                        lineage=lineage_vocabulary(contract))
    graph.meta["content_properties"] = counts[0]["content_properties"]
    if same:
        graph.meta[SAME_FILES] = same
    keys, ends = counts[0]["keys"], counts[0]["edge_ends"]
    for (kind, name), merged in tables.items():
        if kind == "node":
            graph.nodes[name] = NodeTable(name, tuple(keys[name]), merged)
        else:
            graph.edges[name] = EdgeTable(name, ends[name][0], ends[name][1], merged)
    graph.meta["indexes"] = {r.type: list(r.index) for r in contract.spec.nodes
                             if r.type in graph.nodes}
    dropped: dict[str, dict[str, int]] = {}
    for c in counts:
        for etype, d in c["dropped_edges"].items():
            mine = dropped.setdefault(etype, {})
            for k, v in d.items():
                mine[k] = mine.get(k, 0) + v
    rej = pa.concat_tables(rejects, promote_options="permissive")
    rej = rej.take(pa.array(np.argsort(rej.column(ORD).to_numpy(), kind="stable")))
    projection = Projection(graph, sum(c["rows_read"] for c in counts),
                            sum(c["rows_used"] for c in counts),
                            sum(c["duplicates"] for c in counts), rej.drop_columns([ORD]),
                            dropped)
    account, agents = _account(files, parts)
    return projection, account, agents


def _account(files: list[str], parts: dict[int, dict[str, Any]]
             ) -> tuple[SourceRows, dict[str, int]]:
    """The reading's account (skipped lines, fingerprints, findings) in the whole build's
    order."""
    from graphkit.sources.read import SourceRows

    rank = {p: i for i, p in enumerate(files)}
    codex = {p: c for part in parts.values() for p, c in zip(part["files"], part["codex"],
                                                             strict=True)}
    read, bad, prints = [], [], []
    for part in parts.values():
        skipped = part["skipped"]
        cut = int(part["bad_from"])
        read += [(rank.get(p, -1), i, p, n, r) for i, (p, n, r) in enumerate(skipped[:cut])]
        bad += [(codex.get(p, False), rank.get(p, -1), i, p, n, r)
                for i, (p, n, r) in enumerate(skipped[cut:])]
        prints += [(rank.get(owner, -1), i, fp) for i, (owner, fp) in enumerate(zip(
            part["fingerprint_files"], part["fingerprints"], strict=True))]
    skipped_lines = [{"path": s[-3], "line": s[-2], "reason": s[-1]}
                     for s in [*sorted(read), *sorted(bad)]]
    agents: Counter[str] = Counter()
    for part in parts.values():
        agents.update(part["agents"])
    out = SourceRows(skipped=skipped_lines, fingerprints=[fp for *_k, fp in sorted(
        prints, key=lambda x: (x[0], x[1]))], findings=merge_findings(
            [p["findings"] for p in parts.values()]))
    return out, dict(sorted(agents.items()))


# The findings linking reports, in the order a whole build lists them.
_FINDING_ORDER = [("missing-session", "Claude"), ("orphan-subagent", "Claude"),
                  ("orphan-subagent", "Codex")]


def merge_findings(groups: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Findings of several groups as one build would report them: counts added, the
    first examples in the order linking sorts them."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for findings in groups:
        for f in findings:
            # Linking's findings are per client; a repair's names a file (whose path
            # may hold "Codex"), one finding for all.
            client = ("" if f["check"] == "lone-surrogate"
                      else "Codex" if "Codex" in f["message"] else "Claude")
            key = (f["check"], client)
            have = merged.get(key)
            if have is None:
                merged[key] = {**f, "examples": list(f["examples"])}
            else:
                have["count"] += f["count"]
                have["examples"] += f["examples"]
    out = []
    for key in sorted(merged, key=lambda k: _FINDING_ORDER.index(k)
                      if k in _FINDING_ORDER else len(_FINDING_ORDER)):
        f = merged[key]
        if key[0] == "lone-surrogate":
            from graphkit.sources.transcripts.read import lone_surrogate_findings

            out += lone_surrogate_findings([(e["file"], e["line"]) for e in f["examples"]],
                                           f["count"])
            continue
        tail = f["message"].split(" ", 1)[1]
        examples = f["examples"]
        if key[1] == "Claude":
            examples = sorted(examples, key=lambda e: (e.get("session_id") or "",
                                                        e.get("agent_id") or ""))
        out.append({**f, "message": f"{f['count']} {tail}", "examples": examples[:5]})
    return out
