"""Deterministic ids: the same natural key gives the same id on every run and machine.

Two recipes live here:

* :func:`node_id` — graphkit's own, for graph nodes (recipe :data:`NODE_ID_RECIPE`).
* :func:`bernstein_session_id` — Bernstein's per-adapter session id (seed 000),
  provided exactly so users can join graphkit graphs with Bernstein runs.

Both stamp the RFC 4122 version-5 and variant bits on 16 digest bytes, so the
ids look and sort like ordinary UUIDs.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Iterable, Sequence

# Bump when anything below changes how an id is derived: snapshots record it,
# and ids from different recipes must never be mixed in one store.
NODE_ID_RECIPE = 1
BERNSTEIN_RECIPE = 1

# Separators that cannot occur in the parts' JSON-free text encoding: a unit
# separator between parts, and a distinct marker for null so that
# ("a", None) and ("a", "") get different ids.
_SEP = "\x1f"
_NULL = "\x00"


def _stamp_uuid(digest: bytes) -> str:
    b = bytearray(digest[:16])
    b[6] = (b[6] & 0x0F) | 0x50
    b[8] = (b[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(b)))


def _key_text(node_type: str, key: Sequence[object]) -> bytes:
    parts = [node_type]
    parts.extend(_NULL if v is None else str(v) for v in key)
    return (f"graphkit.node.v{NODE_ID_RECIPE}{_SEP}" + _SEP.join(parts)).encode("utf-8")


def node_id(node_type: str, key: Sequence[object]) -> str:
    """Return the deterministic id of the node ``(node_type, key)``.

    >>> node_id("Session", ["s-1"])
    '5f23358d-70e6-5fda-b3b4-49e5d68c1e2b'
    >>> node_id("Thread", ["s-1", None]) != node_id("Thread", ["s-1", ""])
    True
    """
    return _stamp_uuid(hashlib.sha256(_key_text(node_type, key)).digest())


def node_ids(node_type: str, keys: Iterable[Sequence[object]]) -> list[str]:
    """Return :func:`node_id` for many keys of one type."""
    prefix = f"graphkit.node.v{NODE_ID_RECIPE}{_SEP}{node_type}"
    out: list[str] = []
    sha = hashlib.sha256
    for key in keys:
        text = prefix + "".join(_SEP + (_NULL if v is None else str(v)) for v in key)
        out.append(_stamp_uuid(sha(text.encode("utf-8")).digest()))
    return out


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
    return _stamp_uuid(digest)
