"""Where the tests find the repository and its data, wherever a test file sits."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"  # real transcripts (SOURCES.md) and a HypAware cache
SAMPLE_ROWS = REPO / "samples" / "rows"  # the bundled quick-start rows
CACHE = FIXTURES / "hypaware-cache" / "cache"  # a HypAware cache (its README)
SHAPED = FIXTURES / "shaped"  # small transcripts of real versions' shapes (its README)


def not_utf8(path: Path, name: str) -> str:
    """``path / name`` where ``name`` ends in the byte 0xFF (no UTF-8), as a str the way
    Python holds such names (a lone surrogate)."""
    return os.fsdecode(os.fsencode(path) + b"/" + name.encode() + b"\xff")

# One file's path spelled both ways Unicode allows (macOS writes NFD): the same file.
CAFE_NFC = unicodedata.normalize("NFC", "/w/café.py")
CAFE_NFD = unicodedata.normalize("NFD", "/w/café.py")
