"""Variant decoding: hand-encoded byte vectors for each encoding, then the fixture's real cells."""

from __future__ import annotations

import datetime as dt
import json
import struct
import uuid
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphkit.sources.variant import (
    VariantError,
    decode_metadata,
    decode_variant,
    decode_variant_struct,
    is_variant_struct,
    to_json,
    variant_to_json,
)
from tests.helpers.transcripts import fixtures

EMPTY_META = b"\x01\x00\x00"  # version 1, 1-byte offsets, empty dictionary


def prim(type_id: int, payload: bytes = b"") -> bytes:
    """A primitive value: header = type_id << 2 | 0."""
    return bytes([type_id << 2]) + payload


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (prim(0), None),
        (prim(1), True),
        (prim(2), False),
        (prim(3, b"\xfe"), -2),
        (prim(4, struct.pack("<h", -300)), -300),
        (prim(5, struct.pack("<i", 70000)), 70000),
        (prim(6, struct.pack("<q", -(2**40))), -(2**40)),
        (prim(7, struct.pack("<d", 2.5)), 2.5),
        (prim(14, struct.pack("<f", 0.5)), 0.5),
        (prim(8, b"\x02" + struct.pack("<i", 12345)), Decimal("123.45")),
        (prim(9, b"\x03" + struct.pack("<q", -1500)), Decimal("-1.500")),
        (prim(10, b"\x00" + (10**20).to_bytes(16, "little", signed=True)), Decimal(10**20)),
        (prim(11, struct.pack("<i", 19723)), dt.date(2024, 1, 1)),
        (prim(12, struct.pack("<q", 1_500_000)),
         dt.datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=dt.UTC)),
        (prim(13, struct.pack("<q", 60_000_000)), dt.datetime(1970, 1, 1, 0, 1)),
        (prim(17, struct.pack("<q", 3_600_000_001)), dt.time(1, 0, 0, 1)),
        (prim(18, struct.pack("<q", 2_000_000_999)),
         dt.datetime(1970, 1, 1, 0, 0, 2, tzinfo=dt.UTC)),
        (prim(19, struct.pack("<q", 1_000)), dt.datetime(1970, 1, 1, 0, 0, 0, 1)),
        (prim(15, struct.pack("<I", 3) + b"\x00\xffA"), b"\x00\xffA"),
        (prim(16, struct.pack("<I", 5) + "héllo".encode()[:5]), "héll"),
        (prim(20, bytes(range(16))), uuid.UUID(bytes=bytes(range(16)))),
        (bytes([(3 << 2) | 1]) + b"abc", "abc"),          # short string, length 3
        (bytes([1]), ""),                                   # empty short string
    ],
)
def test_primitives_and_short_strings(value: bytes, expected: object) -> None:
    assert decode_variant(EMPTY_META, value) == expected


def test_metadata_with_two_byte_offsets() -> None:
    # header 0b01_0_0001: version 1, offset_size 2; dictionary ["id", "name"]
    meta = bytes([0x41]) + struct.pack("<H", 2) + struct.pack("<HHH", 0, 2, 6) + b"idname"
    assert decode_metadata(meta) == ["id", "name"]


def test_object_with_nested_array_and_object() -> None:
    meta = bytes([0x11, 3, 0, 1, 2, 3]) + b"abc"  # sorted dictionary ["a", "b", "c"]
    inner = bytes([0x02, 1, 2, 0, 2]) + prim(3, b"\x07")            # {"c": 7}
    array = bytes([0x03, 2, 0, 2, 3]) + bytes([0x05, ord("x")]) + prim(0)  # ["x", null]
    # object: 2 fields, 1-byte ids and offsets; field order by name (a, b)
    value = bytes([0x02, 2, 0, 1, 0, len(array), len(array) + len(inner)]) + array + inner
    assert decode_variant(meta, value) == {"a": ["x", None], "b": {"c": 7}}
    assert variant_to_json(meta, value) == '{"a":["x",null],"b":{"c":7}}'


def test_large_object_and_array_headers() -> None:
    meta = bytes([0x01, 1, 0, 1]) + b"k"
    # object, is_large (bit 4 of value_header), 2-byte offsets, 4-byte count
    obj = bytes([(0b10001 << 2) | 2]) + struct.pack("<I", 1) + b"\x00" + struct.pack(
        "<HH", 0, 2) + prim(3, b"\x05")
    assert decode_variant(meta, obj) == {"k": 5}
    # array, is_large (bit 2), 1-byte offsets, 4-byte count
    arr = bytes([(0b100 << 2) | 3]) + struct.pack("<I", 2) + bytes([0, 1, 2]) + prim(1) + prim(2)
    assert decode_variant(meta, arr) == [True, False]


def test_variant_null_and_sql_null_become_none() -> None:
    assert variant_to_json(EMPTY_META, b"\x00") is None
    assert variant_to_json(None, None) is None
    assert variant_to_json(EMPTY_META, bytes([0x03, 0, 0])) == "[]"


def test_json_writer_keeps_exact_decimals_and_encodes_binary() -> None:
    assert to_json([Decimal("0.10"), b"\x00\x01", float("nan"), "é"]) == '[0.10,"AAE=",null,"é"]'


@pytest.mark.parametrize(
    ("meta", "value", "message"),
    [
        (b"\x02\x00\x00", b"\x00", "version"),
        (EMPTY_META, prim(6, b"\x01\x02"), "truncated"),
        (EMPTY_META, prim(31), "unknown variant primitive"),
        (EMPTY_META, bytes([0x02, 1, 5, 0, 1]) + prim(0), "not in metadata"),
        (EMPTY_META, bytes([(10 << 2) | 1]) + b"ab", "short string"),
    ],
)
def test_damaged_bytes_raise_variant_error(meta: bytes, value: bytes, message: str) -> None:
    with pytest.raises(VariantError, match=message):
        decode_variant(meta, value)


@pytest.mark.parametrize(
    ("meta", "value"),
    [
        (b"\x01\x01\x00\x01\xff", prim(0)),  # a field name that is not UTF-8
        (EMPTY_META, bytes([(2 << 2) | 1]) + b"\xff\xfe"),  # a short string that is not
        (EMPTY_META, prim(11, struct.pack("<i", 2**31 - 1))),  # a date past year 9999
        (EMPTY_META, prim(12, b"\x01")),  # a timestamp cut short
    ],
)
def test_other_damage_is_a_variant_error_too(meta: bytes, value: bytes) -> None:
    # Found by mutating real cells: these were UnicodeDecodeError, OverflowError
    # and struct.error, which reached the user as tracebacks.
    with pytest.raises(VariantError, match="damaged variant"):
        to_json(decode_variant(meta, value))


def test_mutated_cells_only_ever_raise_variant_error() -> None:
    import random

    rng = random.Random(7)
    meta0, value0 = b"\x01\x01\x00\x01a", b"\x02\x01\x00\x00\x03\x09hi"
    failures = 0
    for _ in range(5000):
        meta, value = bytearray(meta0), bytearray(value0)
        for _ in range(rng.randint(1, 3)):
            target = rng.choice([meta, value])
            if target and rng.random() < 0.5:
                target[rng.randrange(len(target))] = rng.randrange(256)
            elif target and rng.random() < 0.5:
                del target[rng.randrange(len(target)):]
            else:
                target.extend(rng.randbytes(rng.randint(1, 8)))
        try:
            to_json(decode_variant(bytes(meta), bytes(value)))
        except VariantError:
            failures += 1
    assert failures > 500  # the mutations do damage; every one was reported as such


def test_damaged_cell_names_its_row() -> None:
    col = pa.array([{"metadata": EMPTY_META, "value": prim(1)},
                    {"metadata": b"\x01\x01\x00\x01\xff", "value": prim(1)}],
                   pa.struct([("metadata", pa.binary()), ("value", pa.binary())]))
    with pytest.raises(VariantError, match=r"^row 2: damaged variant metadata"):
        decode_variant_struct(col)


def _claude_data_file() -> pa.Table:
    data = (fixtures() / "hypaware-cache" / "cache" / "datasets" / "ai_gateway_messages"
            / "source=claude" / "table" / "data")
    return pq.read_table(data / "4a2004f2-a63b-4903-a29f-8b3e1c6886e4.parquet")


def test_fixture_cells_decode_to_the_values_hypaware_wrote() -> None:
    table = _claude_data_file()
    assert is_variant_struct(table.schema.field("attributes").type)
    assert not is_variant_struct(table.schema.field("session_id").type)
    rows = dict(zip(table["message_id"].to_pylist(),
                    decode_variant_struct(table["attributes"]), strict=True))
    attrs = json.loads(rows["e1000003-0000-4000-8000-000000000003"])
    assert attrs["claude"]["spawned_by_tool_use_id"] == "toolu_03SpawnC1"
    assert attrs["claude"]["tool_use_result"] == {
        "agentId": "c2ee44ff55aa66bb", "status": "completed", "totalDurationMs": 3000}
    prev = dict(zip(table["message_id"].to_pylist(),
                    decode_variant_struct(table["previous_message_id"]), strict=True))
    assert prev["d0000003-0000-4000-8000-000000000001"] == "[]"
    assert prev["d0000003-0000-4000-8000-000000000002"] == (
        '["d0000003-0000-4000-8000-000000000001"]')
    # README: tools and compact_metadata hold Variant null in every row.
    assert decode_variant_struct(table["tools"]) == [None] * table.num_rows
    assert decode_variant_struct(table["compact_metadata"]) == [None] * table.num_rows


def test_struct_decoder_handles_sql_nulls_and_refuses_shredding() -> None:
    col = pa.array([{"metadata": EMPTY_META, "value": prim(5, struct.pack("<i", 9))}, None],
                   pa.struct([("metadata", pa.binary()), ("value", pa.binary())]))
    assert decode_variant_struct(col) == ["9", None]
    shredded = pa.array([{"metadata": EMPTY_META, "value": None, "typed_value": 1}],
                        pa.struct([("metadata", pa.binary()), ("value", pa.binary()),
                                   ("typed_value", pa.int64())]))
    with pytest.raises(VariantError, match="shredded"):
        decode_variant_struct(shredded)
