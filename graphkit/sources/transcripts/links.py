"""Settle what no single transcript file knows, then shape rows to ``MESSAGES_SCHEMA``.

Runs over every file's pre-rows each time (cached or freshly parsed alike), so a partial
re-read gives the same answer as a full one. The per-client rules are in
:mod:`.claude_links` (resumes, subagent → spawning call, warmups, compactions) and
:mod:`.codex_links` (a thread's session and parent). Both number each thread's messages
(``message_index``, order of first appearance) and record what they found in a
:class:`LinkReport`: thread kinds counted, problems a user should hear of.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.schema import MESSAGES_SCHEMA, SCHEMA_VERSION
from graphkit.sources.transcripts.buffer import LINE_AT, FileParse, checked_rows_table

GATEWAY_ID = "graphkit-local"
_TS = pa.timestamp("us", tz="UTC")
SAMPLE = 5  # examples kept per finding


class ParsedFile(msgspec.Struct):
    """One input file's parse plus its sidecar (Claude ``agent-<id>.meta.json``), if any."""

    path: str
    parse: FileParse
    meta: dict[str, Any] | None = None


class LinkReport(msgspec.Struct):
    """What linking found: threads by kind, and findings (``check``-shaped dicts)."""

    kinds: Counter[str] = msgspec.field(default_factory=Counter)
    findings: list[dict[str, Any]] = msgspec.field(default_factory=list)
    # Codex's state databases (.codex_state.CodexState), when any lie beside the rollouts.
    codex_state: Any = None

    def add(self, check: str, message: str, examples: list[dict[str, Any]]) -> None:
        """Record a finding of ``len(examples)`` cases (a few kept as examples)."""
        if examples:
            self.findings.append({"check": check, "count": len(examples),
                                  "message": message.format(n=len(examples)),
                                  "examples": examples[:SAMPLE]})


class Combiner:
    """Per-file pre-rows joined into a few large tables as the files are read.

    Thousands of small per-file tables would cost far more in Arrow objects (an array,
    its buffers and their bookkeeping per column and file) and in conversion calls than
    in data; so parsed rows wait here as tuples and are converted a batch at a time, and
    tables read back from the index are joined a batch at a time. Each row gets
    ``_file``: its file's position among the files of its kind.
    """

    def __init__(self, batch_rows: int = 20_000, batch_tables: int = 256) -> None:
        self.batch_rows, self.batch_tables = batch_rows, batch_tables
        self._files: dict[str, int] = {}
        self._rows: dict[str, list[tuple[Any, ...]]] = {}   # parsed, not yet converted
        self._row_files: dict[str, list[int]] = {}
        self._tables: dict[str, list[pa.Table]] = {}        # converted, not yet joined
        self._done: dict[str, list[pa.Table]] = {}
        # Files parsed to tables (the two-process parse), not yet given ``_file``.
        self._parsed: dict[str, list[tuple[pa.Table, tuple[pa.Table, int] | None, int]]] = {}
        self._parsed_rows: dict[str, int] = {}
        # Cached files' rows, not yet taken: (base table, start, count, file position).
        self._spans: dict[str, list[tuple[pa.Table, int, int, int]]] = {}
        # Rows left out for a value of the wrong type: (kind, file position, line, why).
        self.bad: list[tuple[str, int, int, str]] = []

    def add_span(self, kind: str, base: pa.Table, start: int, count: int) -> None:
        """Take a cached file's pre-rows: rows ``start`` to ``start + count`` of ``base``
        (the cache's table, with its own ``_file``). Runs of cached files are taken with
        one ``take``, not a table per file."""
        i = self._files.get(kind, 0)
        self._files[kind] = i + 1
        if count:
            self._convert(kind)  # rows of earlier files first: keep the file order
            self._spans.setdefault(kind, []).append((base, start, count, i))

    def _take_spans(self, kind: str) -> None:
        spans = self._spans.pop(kind, [])
        if not spans:
            return
        self._join(kind)  # the tables of files before these spans first
        base = spans[0][0]
        assert all(b is base for b, *_ in spans)  # one cache per read
        idx = np.concatenate([np.arange(s, s + c, dtype=np.int64) for _, s, c, _ in spans])
        files = np.repeat(np.array([i for *_, i in spans], dtype=np.int32),
                          [c for _, _, c, _ in spans])
        table = base.take(pa.array(idx)).drop_columns(["_file"])
        self._tables.setdefault(kind, []).append(
            table.append_column("_file", pa.array(files, pa.int32())))
        self._flush(kind)

    def add(self, parse: FileParse) -> None:
        """Take ``parse``'s pre-rows (it is left without them)."""
        kind = parse.kind
        self._take_spans(kind)  # cached files before this one first
        i = self._files.get(kind, 0)
        self._files[kind] = i + 1
        if parse.table is not None:
            if parse.table.num_rows:
                self._convert(kind)  # rows of earlier files first: keep the file order
                # Their ``_file`` is added a batch at a time (_join): an Arrow column per
                # file cost ~40 us, 0.2 s over the benchmark's 5,698 files.
                self._parsed.setdefault(kind, []).append((parse.table, parse.run, i))
                self._parsed_rows[kind] = self._parsed_rows.get(kind, 0) + parse.table.num_rows
        elif parse.rows:
            self._rows.setdefault(kind, []).extend(parse.rows)
            self._row_files.setdefault(kind, []).extend([i] * len(parse.rows))
            if len(self._rows[kind]) >= self.batch_rows:
                self._convert(kind)
        parse.rows, parse.table, parse.run = [], None, None
        tables = self._tables.get(kind, [])
        parsed = self._parsed.get(kind, [])
        if (len(tables) + len(parsed) >= self.batch_tables
                or sum(t.num_rows for t in tables) + self._parsed_rows.get(kind, 0)
                >= self.batch_rows):
            self._flush(kind)

    def _join(self, kind: str) -> None:
        """Parsed files' tables waiting for their ``_file``, joined as one table."""
        parsed = self._parsed.pop(kind, [])
        self._parsed_rows.pop(kind, None)
        if not parsed:
            return
        files = np.repeat(np.array([i for *_, i in parsed], dtype=np.int32),
                          [t.num_rows for t, *_ in parsed])
        # Files that lie next to each other in one run's table, as that table's slice: a
        # table per file would be a chunk per file and column to copy when joined.
        pieces: list[tuple[pa.Table, int, int]] = []  # (table, start, count)
        for table, run, _ in parsed:
            base, start = run if run is not None else (table, 0)
            if pieces and pieces[-1][0] is base and pieces[-1][1] + pieces[-1][2] == start:
                pieces[-1] = (base, pieces[-1][1], pieces[-1][2] + table.num_rows)
            else:
                pieces.append((base, start, table.num_rows))
        joined = pa.concat_tables([t.slice(s, n) for t, s, n in pieces])
        self._tables.setdefault(kind, []).append(
            joined.append_column("_file", pa.array(files, pa.int32())))

    def _convert(self, kind: str) -> None:
        rows = self._rows.pop(kind, [])
        files = self._row_files.pop(kind, [])
        if rows:
            self._join(kind)  # the tables of files before these rows first
            table, bad = checked_rows_table(rows)
            if bad:
                left_out = {i for i, _ in bad}
                self.bad.extend((kind, files[i], rows[i][LINE_AT], why) for i, why in bad)
                files = [f for i, f in enumerate(files) if i not in left_out]
            table = table.append_column("_file", pa.array(files, pa.int32()))
            self._tables.setdefault(kind, []).append(table)

    def _flush(self, kind: str) -> None:
        self._join(kind)
        tables = self._tables.pop(kind, [])
        if tables:
            self._done.setdefault(kind, []).append(pa.concat_tables(tables).combine_chunks())

    def left_out(self, kinds: list[str]) -> list[tuple[str, int, int, str]]:
        """Every row left out for a value of the wrong type, ``(kind, file position, line,
        why)``: by kind in ``kinds`` order, then by file, each file's rows in order.

        The rows still waiting are converted first: a parsed file's rows are checked only
        when converted, which for the last batch is after the files were read, so the
        list was short of them before (and the cache stored those files as having none).
        A cached or two-process file's rows are told when the file is added, the others'
        at conversion; sorting gives one order whichever way each file came."""
        for kind in kinds:
            self._take_spans(kind)
            self._convert(kind)
        rank = {kind: i for i, kind in enumerate(kinds)}
        return sorted(self.bad, key=lambda b: (rank[b[0]], b[1]))  # stable: lines stay

    def table(self, kind: str) -> pa.Table | None:
        """All rows of ``kind`` with their ``_file``, or None if there are none."""
        self._take_spans(kind)
        self._convert(kind)
        self._flush(kind)
        done = self._done.get(kind)
        return pa.concat_tables(done) if done else None


def number_messages(threads: list[Any], mids: list[str],
                    ts: list[int]) -> tuple[list[int], dict[Any, int]]:
    """Return each row's message_index within its thread and each thread's first timestamp."""
    index_of: dict[str, int] = {}
    counters: dict[Any, int] = {}
    start: dict[Any, int] = {}
    out = []
    for key, mid, t in zip(threads, mids, ts, strict=True):
        idx = index_of.get(mid)
        if idx is None:
            idx = index_of[mid] = counters.get(key, 0)
            counters[key] = idx + 1
        out.append(idx)
        first = start.get(key)
        if first is None or t < first:
            start[key] = t
    return out, start


def value_codes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Each value's code (in order of first appearance, a null one code too) and the
    distinct values in code order."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    return (encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            encoded.dictionary)


class ColumnCodes:
    """:func:`value_codes` of ``table``'s columns, each encoded once: linking asks for the
    codes of ``message_id`` and ``session_id`` in two steps (the held-once test and the
    numbering), and hashing 92k message ids is the larger part of either."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self._codes: dict[str, tuple[np.ndarray, pa.Array]] = {}

    @classmethod
    def of(cls, table: pa.Table, codes: ColumnCodes | None) -> ColumnCodes:
        """``codes`` if they are of ``table`` itself, else new ones (a step that changed
        the table, e.g. settling duplicates, leaves codes of another)."""
        return codes if codes is not None and codes.table is table else cls(table)

    def __call__(self, name: str) -> tuple[np.ndarray, pa.Array]:
        got = self._codes.get(name)
        if got is None:
            got = self._codes[name] = value_codes(self.table[name])
        return got


class Threads(msgspec.Struct):
    """Each row's thread (a code, threads numbered in order of first appearance), the
    threads' keys and first timestamps, and each row's ``message_index``."""

    code: np.ndarray               # int64 per row
    keys: list[tuple[Any, ...]]    # per thread, the key columns' values
    started: np.ndarray            # int64 per thread: its earliest message_created_at
    index: np.ndarray              # int32 per row


def number_threads(table: pa.Table, key_columns: tuple[str, ...], ts: np.ndarray,
                   codes: ColumnCodes | None = None) -> Threads:
    """:func:`number_messages` by array operations: threads keyed by ``key_columns``,
    ``ts`` each row's ``message_created_at`` (microseconds); ``codes``: the codes of
    ``table``'s columns already encoded, if any.

    As there, a message id seen before (in any thread) keeps the index it got first;
    a new one takes the next index of its row's thread.
    """
    codes = ColumnCodes.of(table, codes)
    n = table.num_rows
    key = np.zeros(n, dtype=np.int64)
    for name in key_columns:
        code, values = codes(name)
        key = key * max(len(values), 1) + code
    # Threads numbered in order of first appearance (the combined key may be sparse).
    first_of, thread = _first_rows(key)
    keys_at = [table[name].take(pa.array(first_of)).to_pylist() for name in key_columns]
    keys = list(zip(*keys_at, strict=True)) if keys_at else []
    started = np.full(len(first_of), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(started, thread, ts)
    # Message ids: each one's first row gives its thread and its index there.
    mid_code, _ = codes("message_id")
    firsts, mid = _first_rows(mid_code)  # firsts ascending: codes follow first appearance
    owner = thread[firsts]
    order = np.argsort(owner, kind="stable")
    rank = np.empty(len(firsts), dtype=np.int64)
    sorted_owner = owner[order]
    group_start = np.flatnonzero(np.r_[True, sorted_owner[1:] != sorted_owner[:-1]])
    sizes = np.diff(np.r_[group_start, len(order)])
    rank[order] = np.arange(len(order)) - np.repeat(group_start, sizes)
    return Threads(thread, keys, started, rank[mid].astype(np.int32))


def _first_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For codes 0..k-1 in order of first appearance (dense after ``np.unique``): each
    code's first row, ascending, and each row's code renumbered by first appearance."""
    if not len(codes):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    renumber = np.empty(len(first), dtype=np.int64)
    renumber[order] = np.arange(len(first))
    return first[order].astype(np.int64), renumber[inverse.reshape(-1)]


def finish_rows(table: pa.Table, provider: str, client: str, index: Any,
            started: Any, attributes: list[str | None],
            keep_file: bool = False) -> pa.Table:
    """Return the pre-rows as ``MESSAGES_SCHEMA`` rows, in schema column order (and, with
    ``keep_file``, each row's ``_file`` after them)."""
    n = table.num_rows
    computed: dict[str, Any] = {
        "gateway_id": pa.repeat(pa.scalar(GATEWAY_ID, pa.string()), n),
        "schema_version": pa.repeat(pa.scalar(SCHEMA_VERSION, pa.int32()), n),
        "provider": pa.repeat(pa.scalar(provider, pa.string()), n),
        "conversation_source": pa.repeat(pa.scalar(client, pa.string()), n),
        "client_name": pa.repeat(pa.scalar(client, pa.string()), n),
        "conversation_started_at": pa.array(started, pa.int64()).cast(_TS),
        "message_index": pa.array(index, pa.int32()),
        "part_id": pc.binary_join_element_wise(
            table["message_id"], pc.cast(table["part_index"], pa.string()), "#"),
        "attributes": pa.array(attributes, pa.string()),
        # The UTC date: a cast does what strftime("%Y-%m-%d") does, 8x faster.
        "date": pc.cast(pc.cast(table["message_created_at"], pa.date32()), pa.string()),
    }
    arrays = []
    for column in MESSAGES_SCHEMA:
        if column.name in computed:
            arrays.append(computed[column.name])
        elif column.name in table.column_names:
            arrays.append(table[column.name])
        else:
            arrays.append(pa.nulls(n, column.type))
    if keep_file:
        return pa.Table.from_arrays([*arrays, table["_file"]],
                                    schema=MESSAGES_SCHEMA.append(pa.field("_file", pa.int32())))
    return pa.Table.from_arrays(arrays, schema=MESSAGES_SCHEMA)


def closure_keys(files: list[ParsedFile], tables: dict[str, pa.Table | None]) -> list[set[str]]:
    """For each file (in ``files`` order), the keys by which linking may join it to other
    files: two files sharing a key may change each other's rows, files that share none
    (directly or through others) link alike read together or apart.

    One key per cross-file rule of :mod:`.claude_links`, :mod:`.extras` and :mod:`.codex_links`:
    ``s:`` sessions (resumes are ranked per session, subagents' sidecars, links and warmups
    are keyed by session, ``/branch`` copies and continuations name their origin session),
    ``m:`` message ids and uuids (replays settled by message id, ``part_id`` kept once,
    compactions name another session's uuid, a fork names its parent's last uuid),
    ``c:`` spawning calls, ``u:`` usage pairs (counted once over all files), ``t:`` agent
    teams; every Codex rollout shares ``x:codex`` (parents are matched by time and cwd
    over all threads). ``tables``: the combined
    pre-rows of each kind, ``_file`` the file's position among the files of its kind.
    """
    out: list[set[str]] = []
    position: dict[str, int] = {}
    of_kind: dict[str, list[int]] = {}
    for f in files:
        position[f.path] = len(of_kind.setdefault(f.parse.kind, []))
        of_kind[f.parse.kind].append(len(out))
        out.append(_fact_keys(f))
    for kind, members in of_kind.items():
        table = tables.get(kind)
        if table is None or not table.num_rows:
            continue
        owners = table.column("_file").to_pylist()
        for name in ("session_id", "message_id", "provider_uuid", "logical_parent_uuid"):
            prefix = "s:" if name == "session_id" else "m:"
            for i, value in zip(owners, table.column(name).to_pylist(), strict=True):
                if value:
                    out[members[i]].add(prefix + value)
    return out


def _fact_keys(f: ParsedFile) -> set[str]:
    facts = f.parse.facts
    if f.parse.kind == "codex":
        keys = {"x:codex"}
        for name in ("thread_id", "session_id", "parent_thread_id"):
            if facts.get(name):
                keys.add(f"s:{facts[name]}")
        return keys
    keys = {f"s:{s}" for s in facts.get("sessions", [])}
    keys.update(f"s:{s}" for s in (facts.get("forked") or {}).values())
    keys.update(f"t:{t}" for t in (facts.get("teams") or {}))
    keys.update(f"c:{c}" for c in (facts.get("spawns") or {}))
    keys.update(f"c:{c}" for c in (facts.get("inline_agents") or {}).values() if c)
    for sess, _named, call in [*facts.get("agent_links", []), *facts.get("run_links", [])]:
        keys.update((f"s:{sess}", f"c:{call}"))
    keys.update(f"u:{key}" for _line, key, _usage in facts.get("usage", []))
    # Records naming other sessions: a background continuation's pair (a continued-in
    # record, or a job's state.json of no session of its own), a fork's parent; and the
    # sessions a cost-state or workspace record speaks for.
    keys.update(f"s:{s}" for pair in facts.get("continued_in", []) for s in pair
                if isinstance(s, str) and s)
    ref = facts.get("fork_ref") or {}
    if ref.get("parent_session_id"):
        keys.add(f"s:{ref['parent_session_id']}")
    if ref.get("parent_last_uuid"):
        keys.add(f"m:{ref['parent_last_uuid']}")
    for name in ("cost_state", "workspace"):
        keys.update(f"s:{s}" for s in (facts.get(name) or {}) if isinstance(s, str) and s)
    if f.meta and isinstance(f.meta.get("toolUseId"), str):
        keys.add("c:" + f.meta["toolUseId"])
    return keys
