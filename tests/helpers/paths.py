"""Where the tests find the repository and its data, wherever a test file sits."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"  # real transcripts (SOURCES.md) and a HypAware cache
SAMPLE_ROWS = REPO / "samples" / "rows"  # the bundled quick-start rows
CACHE = FIXTURES / "hypaware-cache" / "cache"  # a HypAware cache (its README)
SHAPED = FIXTURES / "shaped"  # small transcripts of real versions' shapes (its README)
