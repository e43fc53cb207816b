"""Every source as full ``ai_gateway_messages`` rows (``graphkit rows``).

Where :func:`graphkit.sources.read.read_sources` reads only what a contract
needs, this reads the whole schema, so the rows graphkit projects from
transcripts can be written out and used elsewhere (or built again later).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphkit.core.content import CONTENT_PATHS
from graphkit.core.errors import SourceError, first_line
from graphkit.core.schema import (
    CONTENT_COLUMNS,
    MESSAGES_SCHEMA,
    first_failing_row,
    json_as_text,
)
from graphkit.core.times import epoch_times, naive_as_utc, text_times
from graphkit.sources.read import (
    Progress,
    SourceRows,
    gather_sources,
    note_repairs,
    reconcile,
    since_filter,
)
from graphkit.sources.row_files import read_whole_files
from graphkit.sources.touched import with_touched_files

# Output schema: the table's types, every column nullable, so a row a source
# got wrong (say, no session) is written as it is rather than refused here.
OUT_SCHEMA = pa.schema([f.with_nullable(True) for f in MESSAGES_SCHEMA])


# Text columns that hold JSON documents: an object read from JSON Lines (a struct) is
# written as its JSON text, as a build reads it.
_JSON_COLUMNS = frozenset({"attributes", "tools", "tool_args", "raw_frame", "compact_metadata"})


def _same_kind(name: str, target: pa.DataType, t: pa.DataType) -> bool:
    """Whether a source column of type ``t`` is the kind ``target`` is: it may differ in
    width, unit, zone or encoding, never in kind, as the build's contract check says
    (round eight: ``rows`` wrote int ids as text, ints as booleans, decimals and floats
    as ints, a struct id as JSON text, without a word, where ``build`` refuses them)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_null(t):
        return True
    text = (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_string_view(t)
            or pa.types.is_binary_view(t))
    if pa.types.is_string(target):
        # Times too: Arrow's JSON reader infers ISO text ("2026-11-20") as a timestamp.
        return text or pa.types.is_temporal(t) or (
            name in _JSON_COLUMNS and (pa.types.is_struct(t) or pa.types.is_list(t)
                                       or pa.types.is_map(t)))
    if pa.types.is_integer(target):
        return pa.types.is_integer(t)
    if pa.types.is_boolean(target):
        return pa.types.is_boolean(t)
    if pa.types.is_timestamp(target):
        # Numbers are times since 1970 in the unit their size names (``epoch_times``).
        return (pa.types.is_timestamp(t) or pa.types.is_date(t) or text
                or pa.types.is_integer(t) or pa.types.is_floating(t))
    return True


def _to_schema(table: pa.Table, source: str) -> pa.Table:
    arrays = []
    for f in OUT_SCHEMA:
        if f.name not in table.column_names:
            arrays.append(pa.nulls(table.num_rows, f.type))
            continue
        col = table.column(f.name)
        if col.type != f.type and not _same_kind(f.name, f.type, col.type):
            raise SourceError(f"column {f.name!r} has type {col.type}, but `graphkit rows` "
                              f"writes it as {f.type}", path=source, column=f.name,
                              hint="convert the column where the rows are written")
        if col.type != f.type:
            try:
                col = _as_written(col, f, source)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SourceError(f"column {f.name!r} cannot be read as {f.type}: "
                                  f"{first_line(exc)}", path=source, column=f.name,
                                  row=first_failing_row(
                                      col, partial(_as_written, f=f, source=source))
                                  ) from None
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=OUT_SCHEMA)


def _as_written(col: Any, f: pa.Field, source: str) -> Any:
    """``col`` in ``f``'s type, as `graphkit rows` writes it."""
    if pa.types.is_timestamp(f.type) and (pa.types.is_string(col.type)
                                          or pa.types.is_large_string(col.type)):
        col = text_times(col)
    elif pa.types.is_timestamp(f.type) and (pa.types.is_integer(col.type)
                                            or pa.types.is_floating(col.type)):
        col = epoch_times(col, f.name, source)
    elif pa.types.is_map(col.type) or pa.types.is_struct(col.type) \
            or pa.types.is_list(col.type):
        # A JSON column written as a map (Spark, DuckDB) or inferred as a struct or list
        # (JSON Lines objects and arrays): its JSON text, as a build reads it (round
        # eight: this refused the file)
        col = json_as_text(col.combine_chunks())
    elif pa.types.is_timestamp(col.type) and col.type.tz is None:
        col = naive_as_utc(col)
    return col.cast(f.type)


@dataclass
class MessageRows:
    """Full-schema rows of all sources, and the account of reading them."""

    table: pa.Table
    account: SourceRows

    @property
    def skipped(self) -> list[dict[str, Any]]:
        """Every line (or whole file, line 0) that gave no rows: ``{"path", "line", "reason"}``."""
        return self.account.skipped


def read_message_rows(
    paths: Sequence[Path],
    *,
    strict: bool = False,
    since: datetime | None = None,
    until: datetime | None = None,
    cache_dir: Path | None = None,
    include_content: bool = False,
    progress: Progress | None = None,
) -> MessageRows:
    """All rows of all sources in the ``ai_gateway_messages`` schema.

    Content columns are written as nulls unless ``include_content`` is set.
    """
    read = SourceRows()
    repaired: list[dict[str, Any]] = []
    gather_sources(paths, read, read_rows=lambda path: read_whole_files(path, repaired),
                   iceberg_columns=None, strict=strict, since=since, cache_dir=cache_dir,
                   progress=progress)
    note_repairs(read, repaired)
    reconcile(read)  # one session of HypAware's copies, as a build reads it
    pieces, read.pieces = read.pieces, []
    if not pieces:
        raise SourceError("no sources given", hint="name at least one file or folder")
    table = since_filter(pa.concat_tables([_to_schema(t, label) for label, t in pieces]),
                         since, until)
    # The files tool calls touched, computed while the arguments are still here:
    # rows written without content still build the same File nodes.
    table = with_touched_files(table, keep_args=True)
    if not include_content:
        for name in CONTENT_COLUMNS:
            i = table.schema.get_field_index(name)
            table = table.set_column(i, OUT_SCHEMA.field(name),
                                     pa.nulls(table.num_rows, OUT_SCHEMA.field(name).type))
        table = without_content_paths(table)
    return MessageRows(table, read)


def without_content_paths(table: pa.Table) -> pa.Table:
    """``table`` with the content inside its JSON columns (:data:`CONTENT_PATHS`: a
    subagent's description in ``attributes``) taken out of each document. Only the
    documents that name a content key are parsed; the others are kept as they are.

    >>> t = pa.table({"attributes": ['{"claude": {"agent_type": "x", "description": "k"}}',
    ...                              '{"usage": {}}', None]})
    >>> without_content_paths(t).column("attributes").to_pylist()
    ['{"claude": {"agent_type": "x"}}', '{"usage": {}}', None]
    """
    import json

    import pyarrow.compute as pc

    for column, paths in CONTENT_PATHS.items():
        if column not in table.column_names:
            continue
        col = table.column(column)
        keys = {p[-1] for p in paths}
        hit = None
        for key in keys:
            found = pc.fill_null(pc.match_substring(col, json.dumps(key)), False)
            hit = found if hit is None else pc.or_(hit, found)
        if hit is None or not pc.any(hit).as_py():
            continue
        values = col.to_pylist()
        for i in pc.indices_nonzero(hit).to_pylist():
            values[i] = _drop_paths(values[i], paths)
        i = table.schema.get_field_index(column)
        table = table.set_column(i, table.schema.field(i), pa.array(values, col.type))
    return table


def _drop_paths(text: str, paths: tuple[tuple[str, ...], ...]) -> str:
    import json

    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return text  # not a document a path reads: nothing of it reaches the graph
    changed = False
    for path in paths:
        node = doc
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and path[-1] in node:
            del node[path[-1]]
            changed = True
    return json.dumps(doc, ensure_ascii=False) if changed else text
