"""Deterministic ids: the same natural key gives the same id on every run and machine.

Two recipes live here:

* :func:`node_id` — graphkit's own, for graph nodes (recipe :data:`NODE_ID_RECIPE`).
* :func:`bernstein_session_id` — Bernstein's per-adapter session id (seed 000),
  provided exactly so users can join graphkit graphs with Bernstein runs.

Both stamp the RFC 4122 version-5 and variant bits on 16 digest bytes, so the
ids look and sort like ordinary UUIDs.

The node-id recipe is written once, here, in two forms that give the same
ids: scalar (:func:`node_id`, :func:`node_ids`) and over Arrow arrays
(:func:`key_texts`, :func:`hash_key_texts`, what the projection uses)::

    key text = part_1 SEP part_2 SEP ... part_n     (a null part is NULL_MARKER)
    id       = uuid5-stamp(sha256(id_prefix(type) + key text)[:16])
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

# Bump when anything below changes how an id is derived: snapshots record it,
# and ids from different recipes must never be mixed in one store.
NODE_ID_RECIPE = 1
BERNSTEIN_RECIPE = 1

# A unit separator between key parts, and a distinct marker for a null part so
# that ("a", None) and ("a", "") get different ids. A key value may itself hold
# either character; the projection then proves its groups apart another way
# (see graphkit.projection.edges).
KEY_SEP = "\x1f"
NULL_MARKER = "\x00"


def id_prefix(node_type: str) -> bytes:
    """The bytes hashed before a node's key text: recipe version and type."""
    return f"graphkit.node.v{NODE_ID_RECIPE}{KEY_SEP}{node_type}{KEY_SEP}".encode()


def key_text(key: Sequence[object]) -> str:
    """The key parts joined as the id recipe joins them.

    >>> key_text(["s-1", None]) == "s-1" + KEY_SEP + NULL_MARKER
    True
    """
    if not key:
        raise ValueError("a node key has at least one part")
    return KEY_SEP.join(NULL_MARKER if v is None else str(v) for v in key)


def stamp_uuid(digest: bytes) -> str:
    """The first 16 bytes of ``digest`` as a version-5, RFC 4122 UUID text."""
    b = bytearray(digest[:16])
    b[6] = (b[6] & 0x0F) | 0x50
    b[8] = (b[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(b)))


def node_id(node_type: str, key: Sequence[object]) -> str:
    """Return the deterministic id of the node ``(node_type, key)``.

    >>> node_id("Session", ["s-1"])
    '5f23358d-70e6-5fda-b3b4-49e5d68c1e2b'
    >>> node_id("Thread", ["s-1", None]) != node_id("Thread", ["s-1", ""])
    True
    """
    return stamp_uuid(hashlib.sha256(id_prefix(node_type) + key_text(key).encode()).digest())


def node_ids(node_type: str, keys: Iterable[Sequence[object]]) -> list[str]:
    """Return :func:`node_id` for many keys of one type."""
    prefix = id_prefix(node_type)
    sha = hashlib.sha256
    return [stamp_uuid(sha(prefix + key_text(k).encode()).digest()) for k in keys]


def key_texts(parts: Sequence[pa.Array | pa.ChunkedArray | None], n: int) -> pa.Array:
    """:func:`key_text` of every row: one text per row joining the key parts.

    ``parts`` are ``n``-long columns; ``None`` stands for a part that is always null.
    """
    if not parts:
        raise ValueError("a node key has at least one part")
    arrays = []
    for p in parts:
        if p is None:
            arrays.append(pa.nulls(n, pa.string()))
            continue
        arr = p.combine_chunks() if isinstance(p, pa.ChunkedArray) else p
        arrays.append(arr if pa.types.is_string(arr.type) else arr.cast(pa.string()))
    return pc.binary_join_element_wise(*arrays, KEY_SEP, null_handling="replace",
                                       null_replacement=NULL_MARKER)


def parts_split_back(values: pa.Array | pa.ChunkedArray) -> bool:
    """Whether key texts made of ``values`` split back into their parts: no
    value holds :data:`KEY_SEP` or is :data:`NULL_MARKER`. Then different keys
    have different key texts. ``False`` also for a non-text column ("not known").
    """
    if not pa.types.is_string(values.type):
        return False
    return not (pc.any(pc.match_substring(values, KEY_SEP)).as_py()
                or pc.any(pc.equal(values, NULL_MARKER)).as_py())


def hash_key_texts(node_type: str, texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The node ids of key texts (from :func:`key_texts`), as a string array.

    Only the SHA-256 per key runs in Python; the version/variant stamp and the
    UUID text are made for all ids at once with numpy, giving what
    :func:`stamp_uuid` gives.
    """
    import numpy as np

    prefix = id_prefix(node_type)
    sha = hashlib.sha256
    arr = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    n = len(arr)
    # Whole digests joined and cut by numpy: slicing each one in Python costs more.
    raw = b"".join([sha(prefix + k).digest() for k in arr.cast(pa.binary()).to_pylist()])
    b = np.frombuffer(raw, dtype=np.uint8).reshape(n, 32)[:, :16].copy()
    b[:, 6] = (b[:, 6] & 0x0F) | 0x50  # version 5
    b[:, 8] = (b[:, 8] & 0x3F) | 0x80  # RFC 4122 variant
    hexes = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    digits = np.empty((n, 32), dtype=np.uint8)
    digits[:, 0::2] = hexes[b >> 4]
    digits[:, 1::2] = hexes[b & 0x0F]
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    for lo, hi, at in ((0, 8, 0), (8, 12, 9), (12, 16, 14), (16, 20, 19), (20, 32, 24)):
        text[:, at:at + hi - lo] = digits[:, lo:hi]
    offsets = np.arange(0, 36 * (n + 1), 36, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(text))


def bernstein_session_id(conversation_id: str, adapter: str) -> str:
    """Return Bernstein's deterministic session id for an adapter conversation.

    ``HMAC-SHA256(key=conversation_id, msg="bernstein.adapter:" + adapter)``,
    first 16 bytes, version 5 and RFC 4122 variant stamped (recipe version 1).

    >>> bernstein_session_id("conv-1", "codex")
    '9856177f-240e-59dd-b924-eea87f1cdd49'
    """
    digest = hmac.new(
        conversation_id.encode("utf-8"),
        ("bernstein.adapter:" + adapter).encode("utf-8"),
        hashlib.sha256,
    ).digest()
    return stamp_uuid(digest)
