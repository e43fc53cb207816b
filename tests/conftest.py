"""Shared fixtures: the repo's paths and the shared real-world fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    """The ``shared/`` folder beside the repo (CI lays a copy there)."""
    env = os.environ.get("GRAPHKIT_SHARED")
    candidates = [Path(env)] if env else []
    candidates += [REPO.parent / "shared", REPO.parent.parent / "shared"]
    for c in candidates:
        if (c / "fixtures").is_dir():
            return c
    raise RuntimeError(f"shared/fixtures not found (looked in {candidates}); set GRAPHKIT_SHARED")


@pytest.fixture(scope="session")
def shared() -> Path:
    """Path of ``shared/`` with the real transcript and HypAware fixtures."""
    return shared_dir()


@pytest.fixture(scope="session")
def sample_rows() -> Path:
    """The bundled quick-start rows."""
    return REPO / "samples" / "rows"
