"""What every test pytest runs here shares, the doctests under ``graphkit/`` included
(``tests/conftest.py`` holds the tests' own fixtures).

A build records its snapshot in graphkit's snapshot index, and the tests and docstring
examples build snapshots: here each gets a fresh index of its own, never the one of
whoever runs them (``~/.local/share/graphkit``, among the builds of their own history).
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_snapshot_index(tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHKIT_HOME", str(tmp_path_factory.mktemp("graphkit-home")))
