"""``unnest``: a node or edge rule that sees one row per element of a JSON array.

One row can name several things of one kind (a patch touching three files), and
a rule groups rows, not values; so such a rule first repeats each row once per
element of its array, with the element's fields as new columns. Each distinct
document is parsed once; the repeat is one Arrow ``take``.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import Future
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.contract.spec import Unnest
from graphkit.core.schema import json_as_text
from graphkit.core.text import json_loads, storable_text
from graphkit.projection.groups import no_counts, not_numbers, single


def _elements(doc: str | None) -> list[Any]:
    """The elements of one JSON array document; nothing for null or a non-array."""
    if doc is None:
        return []
    try:
        value = json_loads(doc)
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return storable_text(value)  # JSON's "\\ud800" parses to a lone surrogate
    if type(value) is int:  # what json.dumps gives, without its per-call setup
        return str(value)
    return json.dumps(value, sort_keys=True)


# The documents graphkit's sources write (graphkit/sources/touched.py): one
# `{"path": "…", "reads": N, "writes": N}` object per file. Where every document
# is exactly of this shape (a path without quote, backslash, brace or control
# character; integers as JSON writes them), Arrow's string kernels take the
# elements apart and no document is parsed in Python; otherwise json.loads does.
_FILE_ELEMENT = (r'\{"path": "[^"\\{}\x00-\x1f]*", "reads": (?:0|[1-9][0-9]{0,999}), '
                 r'"writes": (?:0|[1-9][0-9]{0,999})\}')
_FILE_DOCUMENT = rf"^\[(?:{_FILE_ELEMENT}(?:, {_FILE_ELEMENT})*)?\]$"
_FILE_FIELDS = (r'"path": "(?P<path>[^"]*)", "reads": (?P<reads>[0-9]+), '
                r'"writes": (?P<writes>[0-9]+)')
# RE2 builds the bounded repeats' states on every call (~13 ms, whatever the data: most of
# a small incremental build's unnest). In documents of at most _SHORT bytes no number can
# be longer than the bound, so the unbounded pattern matches exactly the same ones.
_SHORT = 1000
_SHORT_DOCUMENT = _FILE_DOCUMENT.replace("{0,999}", "*")


# Element counts per document, and the fields of every element.
_Parts = tuple[np.ndarray, pa.StructArray]


def _file_parts(docs: pa.Array) -> _Parts | None:
    """Element counts per document and the fields of each element (in document
    order), when every document has the shape above; ``None`` otherwise."""
    if len(docs) == 0:
        return None
    longest = pc.max(pc.binary_length(docs)).as_py() or 0
    shape = _SHORT_DOCUMENT if longest <= _SHORT else _FILE_DOCUMENT
    if not pc.all(pc.fill_null(pc.match_substring_regex(docs, shape), True)).as_py():
        return None
    counts = pc.fill_null(pc.count_substring(docs, '{"path": "'), 0)
    full = docs.filter(pc.greater(counts, 0))
    elements = pc.list_flatten(pc.split_pattern(full, "}, {"))
    parts = pc.extract_regex(elements, _FILE_FIELDS)
    return counts.to_numpy(zero_copy_only=False).astype(np.int64), parts


def _file_elements(docs: pa.Array, keys: list[str],
                   parsed: Parsed | None = None) -> tuple[np.ndarray, list[pa.Array]] | None:
    """Element counts per document and each key's text per element (in document
    order), when every document has the shape above; ``None`` otherwise.
    ``parsed``: documents already taken apart (the same ones may be asked for twice)."""
    found = parsed.parts(docs) if parsed is not None else _file_parts(docs)
    if found is None:
        return None
    counts, parts = found
    n = len(parts)
    values = [parts.field(k) if k in ("path", "reads", "writes") else pa.nulls(n, pa.string())
              for k in keys]
    return counts, values


class Parsed:
    """The documents one build has taken apart (:func:`_file_parts`), by their buffers.

    The check for summed values that are no counts (:func:`rows_not_counts`) and the
    unnest itself (:func:`unnest_rows`) read the same column's documents; where both
    see the very same dictionary (the column encoded once, before the rejects are
    known: ``project``'s early encoding), the later takes the earlier's parse, waiting
    for it if it is still running (``project`` starts it on its pool). Arrow buffers
    never change, and each entry holds its array, so the same addresses mean the same
    bytes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: list[tuple[tuple[Any, ...], pa.Array, Future[_Parts | None]]] = []

    @staticmethod
    def _key(docs: pa.Array) -> tuple[Any, ...]:
        return (docs.type, docs.offset, len(docs),
                *((b.address, b.size) if b is not None else None for b in docs.buffers()))

    def parts(self, docs: pa.Array) -> _Parts | None:
        key = self._key(docs)
        with self._lock:
            found = next((f for seen, _held, f in self._seen if seen == key), None)
            mine = found is None
            if found is None:
                found = Future()
                self._seen.append((key, docs, found))
        if mine:
            try:
                found.set_result(_file_parts(docs))
            except BaseException as exc:  # raised by result(), to each asker
                found.set_exception(exc)
        return found.result()


def _python_elements(docs: pa.Array, keys: list[str]) -> tuple[np.ndarray, list[pa.Array]]:
    per_doc = [_elements(d) for d in docs.to_pylist()]
    flat = [e for elems in per_doc for e in elems]
    values = [pa.array([_text(e.get(key)) if isinstance(e, dict) else None for e in flat],
                       pa.string()) for key in keys]
    return np.array([len(e) for e in per_doc], dtype=np.int64), values


def _documents(column: pa.ChunkedArray | pa.Array) -> pa.DictionaryArray:
    """The JSON text of an array column, dictionary-coded: each distinct document once."""
    col = single(column)
    if not (pa.types.is_dictionary(col.type) or pa.types.is_string(col.type)
            or pa.types.is_large_string(col.type) or pa.types.is_null(col.type)):
        col = json_as_text(col)  # a JSON Lines source may hold the array as a list
    if pa.types.is_null(col.type):
        col = col.cast(pa.string())
    return col if pa.types.is_dictionary(col.type) else col.dictionary_encode()


def _elements_of(docs: pa.Array, keys: list[str],
                 parsed: Parsed | None = None) -> tuple[np.ndarray, list[pa.Array]]:
    found = _file_elements(docs, keys, parsed)
    return found if found is not None else _python_elements(docs, keys)


def rows_not_counts(column: pa.ChunkedArray | pa.Array, keys: list[str],
                    parsed: Parsed | None = None) -> dict[tuple[str, str], pa.Array]:
    """Per (key of ``keys``, kind), a mask of the rows with an element in ``column``'s
    array whose value at that key a ``sum`` of the unnested rows must not take: kind
    ``"text"``, text that is no number (``"reads": "x"``); ``"large"`` and
    ``"partial"``, as :func:`graphkit.projection.groups.no_counts` says of whole counts.
    Pairs no row has are left out; the text ones come first. Each distinct document
    is read once, for all the checks; with the documents graphkit's sources write
    (integers: :data:`_FILE_ELEMENT`) it is a cast or two per key. ``parsed``: shared
    with :func:`unnest_rows` of the same documents.

    >>> col = pa.array(['[{"n": 1}, {"n": "x"}]', '[{"n": -2}]', None, '[{"n": 1e300}]'])
    >>> {k: m.to_pylist() for k, m in rows_not_counts(col, ["n"]).items()}
    {('n', 'text'): [True, False, False, False], ('n', 'large'): [False, False, False, True], \
('n', 'partial'): [False, True, False, False]}
    """
    coded = _documents(column)
    counts, values = _elements_of(coded.dictionary, keys, parsed)
    texts: dict[tuple[str, str], pa.Array] = {}
    out: dict[tuple[str, str], pa.Array] = {}
    for key, v in zip(keys, values, strict=True):
        mask = not_numbers(v)
        if mask is not None and pc.any(mask).as_py():
            texts[(key, "text")] = _rows_of(coded, counts, mask)
        for kind, bad in no_counts(v, whole=True).items():
            out[(key, kind)] = _rows_of(coded, counts, bad)
    return {**texts, **out}


def _rows_of(coded: pa.DictionaryArray, counts: np.ndarray, mask: pa.Array) -> pa.Array:
    """Per row of ``coded`` (documents), whether an element of its document is in
    ``mask`` (one entry per element of every distinct document, in order)."""
    doc_of_element = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    bad_docs = np.zeros(len(counts), dtype=bool)
    bad_docs[doc_of_element[mask.to_numpy(zero_copy_only=False)]] = True
    return pc.fill_null(pc.take(pa.array(bad_docs), coded.indices), False)


def unnest_rows(rows: pa.Table, spec: Unnest, parsed: Parsed | None = None) -> pa.Table:
    """``rows`` repeated once per element of ``spec.column``'s array, with one
    text column per ``spec.fields`` entry (the element's value at that key).
    ``parsed``: documents :func:`rows_not_counts` may already have taken apart.

    >>> t = pa.table({"k": ["a", "b", "c"],
    ...               "files": ['[{"path": "/x", "n": 1}, {"path": "/y"}]', None, "[]"]})
    >>> out = unnest_rows(t, Unnest(column="files", fields={"p": "path", "n": "n"}))
    >>> out.column("k").to_pylist(), out.column("p").to_pylist(), out.column("n").to_pylist()
    (['a', 'a'], ['/x', '/y'], ['1', None])
    >>> unnest_rows(t.slice(0, 0), Unnest(column="files", fields={"p": "path"})).num_rows
    0
    """
    if rows.num_rows == 0:  # the offsets below assume at least one row
        out = rows
        for name in spec.fields:
            out = out.append_column(name, pa.array([], pa.string()).dictionary_encode())
        return out
    coded = _documents(rows.column(spec.column))
    keys = list(spec.fields.values())
    doc_counts, values = _elements_of(coded.dictionary, keys, parsed)
    counts = np.append(doc_counts, 0)  # last: null rows
    null_at = len(doc_counts)
    doc_of_row = pc.fill_null(coded.indices, null_at).to_numpy(zero_copy_only=False)
    row_counts = counts[doc_of_row]
    total = int(row_counts.sum())
    parents = np.repeat(np.arange(len(doc_of_row), dtype=np.int64), row_counts)
    # Element k of a row's document sits at doc_start[doc] + k in the flat
    # element list of all documents.
    doc_start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    row_start = np.cumsum(row_counts) - row_counts  # also right for no rows at all
    within = np.arange(total, dtype=np.int64) - np.repeat(row_start, row_counts)
    at = np.repeat(doc_start[doc_of_row], row_counts) + within
    out = rows.take(pa.array(parents))
    positions = pa.array(at)
    for name, v in zip(spec.fields, values, strict=True):
        out = out.append_column(name, pc.take(v, positions).dictionary_encode())
    return out
