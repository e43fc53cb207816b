"""Decode Parquet Variant values (parquet-format ``VariantEncoding.md``) to Python or JSON text.

HypAware's Iceberg cache stores its JSON columns as *unshredded* variants: a Parquet group
``struct<metadata: binary, value: binary>``. No maintained pure-Python package decodes them
(checked PyPI and the docs index: pyspark's ``VariantVal`` needs all of Spark; the other
``*variant*`` packages are about genomics), so this module is a small decoder written from
the spec. It covers every primitive of spec version 1, short strings, objects and arrays.
Shredded variants (a ``typed_value`` child) are not handled: HypAware does not write them,
and :func:`decode_variant_struct` refuses them instead of returning partial values.

A variant value is one header byte followed by its data::

    header = value_header << 2 | basic_type
    basic_type 0 primitive (value_header = type id), 1 short string (value_header = length),
               2 object, 3 array

Integers in the encoding are little-endian, except the UUID primitive (big-endian bytes).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import struct
import uuid
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)

# Primitive type ids (VariantEncoding.md, "Encoding types").
NULL, TRUE, FALSE, INT8, INT16, INT32, INT64, DOUBLE = range(8)
DECIMAL4, DECIMAL8, DECIMAL16, DATE, TIMESTAMP, TIMESTAMP_NTZ, FLOAT, BINARY = range(8, 16)
STRING, TIME_NTZ, TIMESTAMP_NANOS, TIMESTAMP_NTZ_NANOS, UUID = range(16, 21)

_FIXED = {
    INT8: struct.Struct("<b"),
    INT16: struct.Struct("<h"),
    INT32: struct.Struct("<i"),
    INT64: struct.Struct("<q"),
    DOUBLE: struct.Struct("<d"),
    FLOAT: struct.Struct("<f"),
}


class VariantError(ValueError):
    """The bytes are not a valid variant; the message says what is wrong and where."""


def _uint(buf: bytes, pos: int, size: int) -> int:
    if pos + size > len(buf):
        raise VariantError(f"truncated variant: need {size} bytes at offset {pos}")
    return int.from_bytes(buf[pos : pos + size], "little")


def decode_metadata(metadata: bytes) -> list[str]:
    """Return the dictionary of field names that a variant's metadata holds.

    >>> decode_metadata(bytes([0x01, 0x02, 0x00, 0x01, 0x03]) + b"abc")
    ['a', 'bc']
    """
    if not metadata:
        raise VariantError("empty variant metadata")
    header = metadata[0]
    version = header & 0x0F
    if version != 1:
        raise VariantError(f"unsupported variant metadata version {version} (expected 1)")
    offset_size = ((header >> 6) & 0x03) + 1
    size = _uint(metadata, 1, offset_size)
    offsets_at = 1 + offset_size
    strings_at = offsets_at + (size + 1) * offset_size
    offsets = [_uint(metadata, offsets_at + i * offset_size, offset_size) for i in range(size + 1)]
    if strings_at + offsets[-1] > len(metadata):
        raise VariantError("variant metadata dictionary runs past the end of its bytes")
    raw = metadata[strings_at : strings_at + offsets[-1]]
    return [raw[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(size)]


def _decimal(unscaled: int, scale: int) -> Decimal:
    return Decimal(unscaled).scaleb(-scale)


def _primitive(type_id: int, buf: bytes, pos: int) -> Any:
    fixed = _FIXED.get(type_id)
    if fixed is not None:
        if pos + fixed.size > len(buf):
            raise VariantError(f"truncated variant primitive {type_id} at offset {pos}")
        return fixed.unpack_from(buf, pos)[0]
    if type_id == NULL:
        return None
    if type_id == TRUE:
        return True
    if type_id == FALSE:
        return False
    if type_id in (DECIMAL4, DECIMAL8, DECIMAL16):
        width = {DECIMAL4: 4, DECIMAL8: 8, DECIMAL16: 16}[type_id]
        scale = _uint(buf, pos, 1)
        if pos + 1 + width > len(buf):
            raise VariantError(f"truncated variant decimal at offset {pos}")
        unscaled = int.from_bytes(buf[pos + 1 : pos + 1 + width], "little", signed=True)
        return _decimal(unscaled, scale)
    if type_id == DATE:
        (days,) = struct.unpack_from("<i", buf, pos)
        return _EPOCH_DATE + dt.timedelta(days=days)
    if type_id in (TIMESTAMP, TIMESTAMP_NTZ, TIME_NTZ):
        (micros,) = struct.unpack_from("<q", buf, pos)
        if type_id == TIME_NTZ:
            return (dt.datetime.min + dt.timedelta(microseconds=micros)).time()
        base = _EPOCH if type_id == TIMESTAMP else _EPOCH_NAIVE
        return base + dt.timedelta(microseconds=micros)
    if type_id in (TIMESTAMP_NANOS, TIMESTAMP_NTZ_NANOS):
        # Python datetimes stop at microseconds; keep the instant, drop sub-µs digits.
        (nanos,) = struct.unpack_from("<q", buf, pos)
        base = _EPOCH if type_id == TIMESTAMP_NANOS else _EPOCH_NAIVE
        return base + dt.timedelta(microseconds=nanos // 1000)
    if type_id in (BINARY, STRING):
        length = _uint(buf, pos, 4)
        if pos + 4 + length > len(buf):
            raise VariantError(f"variant string/binary runs past the end at offset {pos}")
        data = buf[pos + 4 : pos + 4 + length]
        return data.decode("utf-8") if type_id == STRING else bytes(data)
    if type_id == UUID:
        if pos + 16 > len(buf):
            raise VariantError(f"truncated variant uuid at offset {pos}")
        return uuid.UUID(bytes=bytes(buf[pos : pos + 16]))
    raise VariantError(f"unknown variant primitive type id {type_id} at offset {pos - 1}")


def _value(buf: bytes, pos: int, names: Sequence[str]) -> Any:
    if pos >= len(buf):
        raise VariantError(f"variant value offset {pos} is past the end ({len(buf)} bytes)")
    header = buf[pos]
    basic = header & 0x03
    vh = header >> 2
    if basic == 0:
        return _primitive(vh, buf, pos + 1)
    if basic == 1:
        end = pos + 1 + vh
        if end > len(buf):
            raise VariantError(f"variant short string runs past the end at offset {pos}")
        return buf[pos + 1 : end].decode("utf-8")
    if basic == 2:
        offset_size = (vh & 0x03) + 1
        id_size = ((vh >> 2) & 0x03) + 1
        large = (vh >> 4) & 0x01
        count_size = 4 if large else 1
        n = _uint(buf, pos + 1, count_size)
        ids_at = pos + 1 + count_size
        offs_at = ids_at + n * id_size
        data_at = offs_at + (n + 1) * offset_size
        out: dict[str, Any] = {}
        for i in range(n):
            field_id = _uint(buf, ids_at + i * id_size, id_size)
            if field_id >= len(names):
                raise VariantError(f"variant object names field id {field_id}, not in metadata")
            off = _uint(buf, offs_at + i * offset_size, offset_size)
            out[names[field_id]] = _value(buf, data_at + off, names)
        return out
    # basic == 3: array
    offset_size = (vh & 0x03) + 1
    large = (vh >> 2) & 0x01
    count_size = 4 if large else 1
    n = _uint(buf, pos + 1, count_size)
    offs_at = pos + 1 + count_size
    data_at = offs_at + (n + 1) * offset_size
    return [
        _value(buf, data_at + _uint(buf, offs_at + i * offset_size, offset_size), names)
        for i in range(n)
    ]


def decode_variant_names(metadata: bytes) -> list[str]:
    """:func:`decode_metadata`, with damaged bytes reported as :class:`VariantError`."""
    try:
        return decode_metadata(metadata)
    except (UnicodeDecodeError, struct.error, IndexError) as exc:
        raise VariantError(f"damaged variant metadata ({type(exc).__name__})") from None


def decode_variant(metadata: bytes, value: bytes, names: Sequence[str] | None = None) -> Any:
    """Return the Python value of one variant (dict, list, str, int, float, bool, None, ...).

    Decimals come back as :class:`decimal.Decimal`, dates/times as :mod:`datetime` values,
    binary as ``bytes`` and UUIDs as :class:`uuid.UUID`. ``names`` may pass an already
    decoded metadata dictionary (columns often repeat the same metadata in every row).

    >>> decode_variant(b"\\x01\\x00\\x00", b"\\x0c\\x2a")   # int8 42
    42
    >>> decode_variant(b"\\x01\\x01\\x00\\x01a", b"\\x02\\x01\\x00\\x00\\x03\\x09hi")
    {'a': 'hi'}
    """
    try:
        if names is None:
            names = decode_metadata(metadata)
        return _value(value, 0, names)
    except (UnicodeDecodeError, struct.error, OverflowError, IndexError, RecursionError) as exc:
        # Damaged bytes surface in the decoder as these; callers expect one kind of error.
        raise VariantError(f"damaged variant value ({type(exc).__name__}: "
                           f"{str(exc)[:120]})") from None


def _json(obj: Any, out: list[str]) -> None:
    # A hand-rolled writer because json.dumps cannot print a Decimal as an exact number.
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, str):
        out.append(json.dumps(obj, ensure_ascii=False))
    elif isinstance(obj, int):
        out.append(str(obj))
    elif isinstance(obj, float):
        # JSON has no NaN/Infinity; null is the least surprising stand-in.
        out.append(repr(obj) if math.isfinite(obj) else "null")
    elif isinstance(obj, Decimal):
        out.append(format(obj, "f"))
    elif isinstance(obj, dict):
        out.append("{")
        for i, (key, val) in enumerate(obj.items()):
            if i:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _json(val, out)
        out.append("}")
    elif isinstance(obj, list):
        out.append("[")
        for i, val in enumerate(obj):
            if i:
                out.append(",")
            _json(val, out)
        out.append("]")
    elif isinstance(obj, bytes):
        out.append(json.dumps(base64.b64encode(obj).decode("ascii")))
    elif isinstance(obj, dt.datetime | dt.date | dt.time):
        out.append(json.dumps(obj.isoformat()))
    elif isinstance(obj, uuid.UUID):
        out.append(json.dumps(str(obj)))
    else:  # pragma: no cover - _value returns only the types above
        raise TypeError(f"cannot write {type(obj).__name__} as JSON")


def to_json(obj: Any) -> str:
    """Return compact JSON text for a decoded variant value.

    Decimals print exactly, binary as base64, dates/timestamps/UUIDs as ISO strings.

    >>> to_json({"a": [1, Decimal("1.50"), None]})
    '{"a":[1,1.50,null]}'
    """
    out: list[str] = []
    _json(obj, out)
    return "".join(out)


def variant_to_json(metadata: bytes | None, value: bytes | None,
                    names: Sequence[str] | None = None) -> str | None:
    """Return JSON text for one variant cell, or None for SQL NULL and for Variant null.

    HypAware writes Variant null (a single ``0x00`` value byte) where it has nothing to
    store; a JSON column treats that the same as an absent value.

    >>> variant_to_json(b"\\x11\\x00\\x00", b"\\x00") is None
    True
    >>> variant_to_json(b"\\x11\\x00\\x00", b"\\x03\\x01\\x00\\x06\\x15x1234")
    '["x1234"]'
    """
    if metadata is None or value is None or value == b"\x00":
        return None
    return to_json(decode_variant(metadata, value, names))


def decode_variant_struct(column: Any) -> list[str | None]:
    """Return JSON text (or None) per cell of a ``struct<metadata, value>`` Arrow column.

    Accepts a ``pyarrow.StructArray`` or ``ChunkedArray``. Parsed metadata dictionaries are
    cached by their bytes, since a writer usually repeats one dictionary down a column.
    """
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    out: list[str | None] = []
    cache: dict[bytes, list[str]] = {}
    for chunk in chunks:
        names_in_type = {chunk.type.field(i).name for i in range(chunk.type.num_fields)}
        if "typed_value" in names_in_type:
            raise VariantError("shredded variant columns (typed_value) are not supported")
        metas = chunk.field("metadata").to_pylist()
        values = chunk.field("value").to_pylist()
        valid = chunk.is_valid().to_pylist()
        for ok, meta, val in zip(valid, metas, values, strict=True):
            if not ok or meta is None or val is None or val == b"\x00":
                out.append(None)
                continue
            try:
                names = cache.get(meta)
                if names is None:
                    names = cache[meta] = decode_variant_names(meta)
                out.append(to_json(decode_variant(meta, val, names)))
            except VariantError as exc:
                raise VariantError(f"row {len(out) + 1}: {exc}") from None
    return out


def is_variant_struct(arrow_type: Any) -> bool:
    """Return True for the Arrow type of a variant column, ``struct<metadata, value>``."""
    import pyarrow as pa

    if not pa.types.is_struct(arrow_type):
        return False
    names = [arrow_type.field(i).name for i in range(arrow_type.num_fields)]
    if "metadata" not in names or not ({"value", "typed_value"} & set(names)):
        return False
    return all(
        pa.types.is_binary(arrow_type.field(n).type) or pa.types.is_large_binary(
            arrow_type.field(n).type)
        for n in ("metadata", "value") if n in names
    )
