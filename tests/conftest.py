"""Shared fixtures: the repo's paths and the real-world data under tests/fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


FIXTURES = REPO / "tests" / "fixtures"


@pytest.fixture(autouse=True)
def _own_snapshot_index(tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test's builds record their snapshots in a fresh index of their own,
    never in the user's ~/.local/share/graphkit."""
    monkeypatch.setenv("GRAPHKIT_HOME", str(tmp_path_factory.mktemp("graphkit-home")))


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """``tests/fixtures``: real transcripts (see its SOURCES.md) and a HypAware cache."""
    return FIXTURES


@pytest.fixture(scope="session")
def sample_rows() -> Path:
    """The bundled quick-start rows."""
    return REPO / "samples" / "rows"
