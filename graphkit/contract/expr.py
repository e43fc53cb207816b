"""Derived columns and row filters, evaluated over whole Arrow tables.

Everything here is vectorized: one pyarrow compute call per expression and
table, never a Python loop per row. The one exception is JSON-path lookup in
JSON *text* columns, which parses each distinct candidate document once.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.contract.spec import Filter
from graphkit.core.schema import json_as_text
from graphkit.core.text import json_loads, storable_text


class Expr:
    """A derived column. The kinds below are frozen msgspec Structs rather than dataclasses
    (no methods compiled from source as the module loads: see
    :mod:`graphkit.contract.spec`)."""

    __slots__ = ()

    def columns(self) -> set[str]:
        """Columns the expression reads."""
        raise NotImplementedError

    def evaluate(self, table: pa.Table) -> pa.ChunkedArray | pa.Array:
        """The expression's value for every row of ``table``."""
        raise NotImplementedError


class Column(Expr, msgspec.Struct, frozen=True):
    name: str

    def columns(self) -> set[str]:
        return {self.name}

    def evaluate(self, table: pa.Table) -> pa.ChunkedArray | pa.Array:
        return table.column(self.name)


class Const(Expr, msgspec.Struct, frozen=True):
    value: Any

    def columns(self) -> set[str]:
        return set()

    def evaluate(self, table: pa.Table) -> pa.ChunkedArray | pa.Array:
        return pa.array([self.value] * table.num_rows, type=pa.string() if self.value is None
                        else None)


class Coalesce(Expr, msgspec.Struct, frozen=True):
    names: tuple[str, ...]

    def columns(self) -> set[str]:
        return set(self.names)

    def evaluate(self, table: pa.Table) -> pa.ChunkedArray | pa.Array:
        cols = [table.column(n) for n in self.names]
        target = cols[0].type
        # Null-typed columns (a column that was absent in this source) take the
        # type of the others so coalesce accepts them.
        for c in cols:
            if not pa.types.is_null(c.type):
                target = c.type
                break
        if any(pa.types.is_dictionary(c.type) for c in cols):
            fast = _coalesce_dictionaries(cols)
            if fast is not None:
                return fast
            target = next(c.type for c in cols if pa.types.is_dictionary(c.type))
        return pc.coalesce(*[c.cast(target) if c.type != target else c for c in cols])


def _coalesce_dictionaries(cols: list[pa.ChunkedArray]) -> pa.Array | None:
    """Coalesce of dictionary-encoded text columns, on their indices.

    The dictionaries are laid end to end and each column's indices shifted to
    its part, so the coalesce picks int32 indices, not strings; the result's
    dictionary may repeat values (the projection re-encodes it, working on the
    dictionary only). ``None`` where a column is neither such a dictionary nor
    all null.
    """
    dictionaries, indices = [], []
    offset = 0
    for c in cols:
        arr = c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
        if arr.null_count == len(arr):
            continue  # contributes nothing (e.g. a column this source lacks)
        if not (pa.types.is_dictionary(arr.type) and pa.types.is_string(arr.type.value_type)
                and arr.dictionary.null_count == 0):
            return None
        dictionaries.append(arr.dictionary)
        idx = arr.indices.cast(pa.int32())
        indices.append(pc.add(idx, pa.scalar(offset, pa.int32())) if offset else idx)
        offset += len(arr.dictionary)
    if not indices:
        return None
    picked = pc.coalesce(*indices) if len(indices) > 1 else indices[0]
    return pa.DictionaryArray.from_arrays(picked, pa.concat_arrays(dictionaries))


class JsonPath(Expr, msgspec.Struct, frozen=True):
    column: str
    path: tuple[str, ...]

    def columns(self) -> set[str]:
        return {self.column}

    def evaluate(self, table: pa.Table) -> pa.ChunkedArray | pa.Array:
        return json_path(table.column(self.column), self.path)


class Case(Expr, msgspec.Struct, frozen=True):
    whens: tuple[tuple[Filter, Any], ...]
    otherwise: Any

    def columns(self) -> set[str]:
        out: set[str] = set()
        for f, _ in self.whens:
            out |= f.columns()
        return out

    def evaluate(self, table: pa.Table) -> pa.ChunkedArray | pa.Array:
        # Dictionary-coded: each distinct answer once, rows hold int32 indices
        # (a null answer is a null index, never a null dictionary entry).
        answers = [v for _, v in self.whens] + [self.otherwise]
        values = list(dict.fromkeys(a for a in answers if a is not None))
        code = {v: i for i, v in enumerate(values)}
        n = table.num_rows
        result: pa.Array | pa.ChunkedArray = pa.nulls(n, pa.int32()) \
            if self.otherwise is None else pa.repeat(pa.scalar(code[self.otherwise],
                                                               pa.int32()), n)
        # Apply the rules last to first so the first matching `when` wins.
        for flt, value in reversed(self.whens):
            mask = filter_mask(table, flt)
            result = pc.if_else(mask, pa.scalar(None if value is None else code[value],
                                                pa.int32()), result)
        if isinstance(result, pa.ChunkedArray):
            result = result.combine_chunks()
        return pa.DictionaryArray.from_arrays(result, pa.array(values, pa.string()))


def validated_filter(raw: Any) -> Filter:
    """A ``when:`` filter checked by the contract model (its ValidationError, a
    ValueError, says what is wrong), as the plain :class:`Filter` the projection reads."""
    from graphkit.contract.model import Filter as FilterModel

    return Filter.from_dump(FilterModel.model_validate(raw).model_dump())


def parse_expr(raw: Any, make_filter: Callable[[Any], Filter] = validated_filter) -> Expr:
    """Parse one ``derive:`` entry of a contract into an :class:`Expr`.

    ``make_filter`` turns a ``case`` entry's ``when`` into a filter (the loader
    passes one that reuses its cached checks).

    >>> parse_expr({"coalesce": ["conversation_id", "session_id"]}).columns() == {
    ...     "conversation_id", "session_id"}
    True
    """
    if isinstance(raw, str):
        return Column(raw)
    if not isinstance(raw, dict) or not raw:
        raise ValueError("an expression is a column name or a mapping")
    if "coalesce" in raw:
        names = raw["coalesce"]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise ValueError("`coalesce` takes a non-empty list of column names")
        return Coalesce(tuple(names))
    if "json" in raw:
        path = raw.get("path")
        if isinstance(path, str):
            path = path.split(".")
        if not isinstance(path, list) or not path:
            raise ValueError("`json` needs a `path` (a list of keys or 'a.b.c')")
        return JsonPath(str(raw["json"]), tuple(str(p) for p in path))
    if "case" in raw:
        whens = []
        for item in raw["case"]:
            if not isinstance(item, dict) or set(item) != {"when", "then"}:
                raise ValueError("each `case` entry is {when: <filter>, then: <value>}")
            whens.append((make_filter(item["when"]), item["then"]))
        return Case(tuple(whens), raw.get("else"))
    if "const" in raw:
        return Const(raw["const"])
    raise ValueError(f"unknown expression {sorted(raw)!r}; use coalesce, json, case or const")


def filter_mask(table: pa.Table, flt: Filter) -> pa.ChunkedArray | pa.Array:
    """A boolean mask (no nulls) of the rows of ``table`` that pass ``flt``."""
    masks = []
    for c in flt.not_null:
        masks.append(pc.is_valid(table.column(c)))
    for c in flt.is_null:
        masks.append(pc.is_null(table.column(c)))
    for c in flt.blank:
        masks.append(_on_values(table.column(c), _blank))
    for c, v in flt.equals.items():
        masks.append(_on_values(table.column(c), _Test("equal", v)))
    for c, v in flt.not_equals.items():
        masks.append(_on_values(table.column(c), _Test("not_equal", v)))
    for c, vs in flt.in_.items():
        masks.append(_on_values(table.column(c), _Test("is_in", vs)))
    for c, bound in flt.less_than.items():
        masks.append(_on_values(table.column(c), _Test("less", bound)))
    if not masks:
        return pa.array([True] * table.num_rows)
    out = masks[0]
    for m in masks[1:]:
        out = pc.and_(out, m)
    return out


def all_valid(table: pa.Table, cols: Sequence[str]) -> pa.ChunkedArray | pa.Array:
    """Rows where every one of ``cols`` is not null."""
    out = pc.is_valid(table.column(cols[0]))
    for c in cols[1:]:
        out = pc.and_(out, pc.is_valid(table.column(c)))
    return out


def any_valid(table: pa.Table, cols: Sequence[str | None]) -> pa.ChunkedArray | pa.Array:
    """Rows where at least one of ``cols`` (``None`` entries skipped) is not null."""
    masks = [pc.is_valid(table.column(c)) for c in cols if c is not None]
    if not masks:
        return pa.array([False] * table.num_rows)
    out = masks[0]
    for m in masks[1:]:
        out = pc.or_(out, m)
    return out


class _Test(msgspec.Struct, frozen=True):
    """One comparison of a filter, as a mask without nulls."""

    op: str
    value: Any

    def __call__(self, a: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        if pa.types.is_null(a.type):
            # Only nulls (a column this source lacks): no value equals them.
            return pa.repeat(pa.scalar(self.op == "not_equal"), len(a))
        if self.op == "is_in":
            return pc.is_in(a, value_set=pa.array(self.value).cast(a.type))
        if self.op == "less":
            return pc.fill_null(pc.less(a, self.value), False)
        # A null never equals a value, and so always differs from it.
        out = getattr(pc, self.op)(a, pa.scalar(self.value).cast(a.type))
        return pc.fill_null(out, self.op == "not_equal")


def blank_to_null(col: pa.ChunkedArray | pa.Array, blank: bool = True,
                  also: tuple[str, ...] = ()) -> pa.ChunkedArray | pa.Array:
    """``col`` with empty and whitespace-only text (unless not ``blank``) and the
    values ``also`` made null (a dictionary column keeps its encoding: rows pointing
    at such an entry become null)."""
    if pa.types.is_dictionary(col.type):
        # Chunk by chunk (a Parquet row group each, with its own dictionary):
        # combining them here would unify the dictionaries, which the
        # projection does once for all sources anyway.
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        fixed, changed = [], False
        for arr in chunks:
            blank_entry = _gone(arr.dictionary, blank, also)
            if pc.any(blank_entry).as_py():
                hit = pc.fill_null(pc.take(blank_entry, arr.indices), False)
                indices = pc.if_else(hit, pa.scalar(None, arr.indices.type), arr.indices)
                arr, changed = pa.DictionaryArray.from_arrays(indices, arr.dictionary), True
            fixed.append(arr)
        if not changed:
            return col
        return pa.chunked_array(fixed, col.type) if isinstance(col, pa.ChunkedArray) else fixed[0]
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return col
    hit = _gone(col, blank, also)
    if not pc.any(hit).as_py():
        return col
    return pc.if_else(hit, pa.scalar(None, col.type), col)


def _gone(a: pa.Array | pa.ChunkedArray, blank: bool,
          also: tuple[str, ...]) -> pa.Array | pa.ChunkedArray:
    """Which values become null, a mask without nulls: blank ones (when ``blank``) and
    those in ``also``. A null is no hit (it stays what it is), so a column of nulls and
    no blank text is left untouched."""
    text = pa.types.is_string(a.type) or pa.types.is_large_string(a.type)
    out = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(a), ""), False) if blank and text \
        else pc.is_null(a) if blank else None
    if also:
        hit = pc.is_in(a, value_set=pa.array(also, a.type))
        out = hit if out is None else pc.or_(out, hit)
    return out if out is not None else pc.is_null(a)


def _blank(a: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Null, or text that is empty once Unicode whitespace is trimmed."""
    if not (pa.types.is_string(a.type) or pa.types.is_large_string(a.type)):
        return pc.is_null(a)
    return pc.fill_null(pc.equal(pc.utf8_trim_whitespace(a), ""), True)


def _on_values(col: pa.ChunkedArray | pa.Array,
               test: Callable[[Any], Any]) -> pa.ChunkedArray | pa.Array:
    """``test`` of each row's value; for a dictionary column, the test runs once
    per dictionary entry and rows take their entry's answer (a null row gets
    the answer for a null value)."""
    if not pa.types.is_dictionary(col.type):
        return test(col)
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    answers = test(pa.concat_arrays([arr.dictionary, pa.nulls(1, arr.dictionary.type)]))
    null_at = len(arr.dictionary)
    return pc.take(answers, pc.fill_null(arr.indices, null_at))


def json_path(col: pa.ChunkedArray | pa.Array, path: tuple[str, ...]) -> pa.Array:
    """The value at ``path`` in each JSON document of ``col``, as text (or null).

    ``col`` may hold JSON text or Arrow structs (JSON Lines sources infer
    nested objects as structs).

    >>> json_path(pa.array(['{"claude": {"x": "t1"}}', None, '{}']), ("claude", "x"))
    <pyarrow.lib.StringArray object at ...>
    [
      "t1",
      null,
      null
    ]
    """
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks else pa.array([], col.type)
    if pa.types.is_struct(col.type):
        cur: pa.Array = col
        for key in path:
            if not pa.types.is_struct(cur.type) or cur.type.get_field_index(key) < 0:
                return pa.nulls(len(col), pa.string())
            cur = pc.struct_field(cur, key)
        return json_as_text(cur)
    if pa.types.is_null(col.type):
        return pa.nulls(len(col), pa.string())
    out = json_paths(col, [path])[0]
    return out.cast(pa.string()) if pa.types.is_dictionary(out.type) else out


def json_paths(col: pa.ChunkedArray | pa.Array,
               paths: list[tuple[str, ...]]) -> list[pa.Array]:
    """:func:`json_path` for several paths into one column, parsing each distinct
    document at most once.

    >>> [a.to_pylist() for a in json_paths(
    ...     pa.array(['{"c": {"x": "t1", "y": 2}}', None, '{"c": {"x": "t1", "y": 2}}']),
    ...     [("c", "x"), ("c", "y")])]
    [['t1', None, 't1'], ['2', None, '2']]
    """
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks else pa.array([], col.type)
    if pa.types.is_struct(col.type) or pa.types.is_null(col.type):
        return [json_path(col, p) for p in paths]
    if pa.types.is_dictionary(col.type):
        # Read encoded from Parquet: the dictionary is the distinct documents.
        encoded = col
    elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        # Work on the distinct documents (rows repeat them: every row of a
        # thread carries the same attributes).
        encoded = col.dictionary_encode()
    else:
        raise TypeError(f"cannot read a JSON path from a {col.type} column")
    docs = encoded.dictionary
    if not (pa.types.is_string(docs.type) or pa.types.is_large_string(docs.type)):
        raise TypeError(f"cannot read a JSON path from a {col.type} column")
    out = []
    for answers in _literal_answers(docs, paths) or _searched_answers(docs, paths):
        if answers.null_count == len(answers):
            # No document holds the path (a contract reads many that a source
            # never writes): the same all-null column, without a take per row.
            out.append(pa.DictionaryArray.from_arrays(
                pa.nulls(len(encoded), pa.int32()), pa.array([], pa.string())))
            continue
        # Answers per distinct document are encoded (each value once); rows take
        # int32 indices, never strings.
        coded = answers.dictionary_encode()
        indices = pc.take(coded.indices, encoded.indices)
        out.append(pa.DictionaryArray.from_arrays(indices, coded.dictionary))
    return out


def _searched_answers(docs: pa.Array, paths: list[tuple[str, ...]]) -> list[pa.Array]:
    """Per path, its value in each of ``docs`` (null where absent): documents that
    do not mention a path's last key are not parsed for it."""
    # Only documents that mention a path's last key can hold it: a vectorized
    # substring test keeps the parser off most documents. A path is read only
    # where its own key was seen (a key written with escapes is not looked up).
    wanted = [pc.fill_null(pc.match_substring(docs, json.dumps(p[-1])), False) for p in paths]
    return [pc.if_else(w, answers, pa.scalar(None, pa.string()))
            for w, answers in zip(wanted, _doc_answers(docs, paths, wanted), strict=True)]


# Characters a JSON text can spell only one way without a \u escape (\", \\ and
# \/ are other spellings; non-ASCII text is looked up as json.dumps writes it).
_LITERAL_KEY = re.compile(r"[ !#-.0-\[\]-~]*")


def _literal_answers(docs: pa.Array, paths: list[tuple[str, ...]]) -> list[pa.Array] | None:
    """:func:`_searched_answers` without its substring tests, where they change
    nothing: every last key is spelled one way, so Arrow's reader finding a key
    in a plain document (one object on one line, no \\u) means the document
    mentions it. Plain documents all go to Arrow's reader at once (cheaper than
    a substring search per path); the others as :func:`_searched_answers` reads
    them. ``None`` where Arrow refuses the plain documents."""
    import numpy as np

    if not all(_LITERAL_KEY.fullmatch(p[-1]) for p in paths):
        return None
    plain = pc.fill_null(pc.and_(pc.starts_with(docs, "{"), pc.invert(pc.or_(
        pc.match_substring_regex(docs, "[\\r\\n]"), pc.match_substring(docs, "\\u")))),
        False)
    fast = pc.indices_nonzero(plain)
    fast_answers = _arrow_answers(pc.take(docs, fast), paths) if len(fast) else None
    if fast_answers is None:
        return None
    rest = pc.indices_nonzero(pc.invert(plain))
    if len(rest) == 0:
        return fast_answers
    rest_answers = _searched_answers(pc.take(docs, rest), paths)
    at = np.empty(len(docs), dtype=np.int64)
    at[fast.to_numpy()] = np.arange(len(fast))
    at[rest.to_numpy()] = len(fast) + np.arange(len(rest))
    where = pa.array(at)
    return [pc.take(pa.concat_arrays([f, r.cast(f.type)]), where)
            for f, r in zip(fast_answers, rest_answers, strict=True)]


def _doc_answers(docs: pa.Array, paths: list[tuple[str, ...]],
                 wanted: list[pa.Array]) -> list[pa.Array]:
    """Per path, the value at the path in every document of ``docs`` that some
    path wants (text, or null), each document parsed once.

    Plain one-line objects go through Arrow's JSON reader with the paths as an
    explicit schema of text leaves: it refuses (and everything falls back to
    ``json.loads``) on any document where a path holds a non-text value, a key
    twice, or a non-object on the way, so its answers are ``json.loads``'s.
    Documents with a line break or a ``\\u`` escape (a key could be spelled
    with one) always take ``json.loads``.
    """
    import numpy as np

    anyone = wanted[0]
    for m in wanted[1:]:
        anyone = pc.or_(anyone, m)
    plain = pc.and_(pc.starts_with(docs, "{"), pc.invert(pc.or_(
        pc.match_substring_regex(docs, "[\\r\\n]"), pc.match_substring(docs, "\\u"))))
    fast = pc.indices_nonzero(pc.and_(anyone, plain))
    fast_answers = _arrow_answers(pc.take(docs, fast), paths) if len(fast) else None
    if fast_answers is None:
        fast = pa.array([], pa.uint64())
        fast_answers = [pa.array([], pa.string()) for _ in paths]
        slow = pc.indices_nonzero(anyone)
    else:
        slow = pc.indices_nonzero(pc.and_(anyone, pc.invert(plain)))
    slow_answers: list[list[str | None]] = [[] for _ in paths]
    for doc in pc.take(docs, slow).to_pylist():
        cur = _parse(doc)
        for vals, path in zip(slow_answers, paths, strict=True):
            vals.append(_walk(cur, path))
    # Where each document's answer sits in (fast answers + slow answers).
    at = np.full(len(docs), -1, dtype=np.int64)
    at[fast.to_numpy()] = np.arange(len(fast))
    at[slow.to_numpy()] = len(fast) + np.arange(len(slow))
    where = pa.array(at, mask=at < 0)
    return [pc.take(pa.concat_arrays([f, pa.array(sl, pa.string())]), where)
            for f, sl in zip(fast_answers, slow_answers, strict=True)]


def _arrow_answers(docs: pa.Array, paths: list[tuple[str, ...]]) -> list[pa.Array] | None:
    """The text at each path of each document, read by Arrow's JSON reader;
    ``None`` where it refuses the documents or the paths (see :func:`_doc_answers`)."""
    import pyarrow.json as pj

    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for key in path[:-1]:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                return None  # a path runs through another path's leaf
        if path[-1] in node:
            return None
        node[path[-1]] = None

    def to_type(node: dict[str, Any]) -> pa.DataType:
        return pa.struct([(k, pa.string() if v is None else to_type(v)) for k, v in node.items()])

    # One document per line, built in Arrow: each document + "\n", and the
    # result's contiguous value bytes are the reader's input.
    lines = pc.binary_join_element_wise(docs, pa.scalar("", docs.type), pa.scalar("\n", docs.type))
    width = 8 if pa.types.is_large_string(lines.type) else 4
    offsets = lines.buffers()[1]
    start, end = (int.from_bytes(offsets[width * i: width * (i + 1)].to_pybytes(), "little",
                                 signed=True)
                  for i in (lines.offset, lines.offset + len(lines)))
    text = lines.buffers()[2].slice(start, end - start)
    opts = pj.ParseOptions(explicit_schema=pa.schema(list(to_type(tree))),
                           unexpected_field_behavior="ignore")
    try:
        table = pj.read_json(pa.BufferReader(text), parse_options=opts,
                             read_options=pj.ReadOptions(use_threads=False,
                                                         block_size=max(1 << 20, len(text))))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != len(docs):
        return None
    out = []
    for path in paths:
        cur = table.column(path[0]).combine_chunks()
        valid = pc.is_valid(cur)
        for key in path[1:]:
            cur = pc.struct_field(cur, key)
            valid = pc.and_(valid, pc.is_valid(cur))
        out.append(pc.if_else(valid, cur, pa.scalar(None, pa.string())))
    return out


_INVALID = object()


def _parse(doc: str | None) -> Any:
    if doc is None:
        return _INVALID
    try:
        return json_loads(doc)
    except ValueError:
        return _INVALID


def _walk(cur: Any, path: tuple[str, ...]) -> str | None:
    if cur is _INVALID:
        return None
    for key in path:
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    if cur is None or (isinstance(cur, float) and not math.isfinite(cur)):
        return None  # NaN, Infinity, 1e400: Python's json reads them, but they are no number
    return storable_text(cur) if isinstance(cur, str) else json.dumps(cur, sort_keys=True)
