"""What every test pytest runs here shares, the doctests under ``graphkit/`` included
(``tests/conftest.py`` holds the tests' own fixtures).

The docstring examples build snapshots, and a build records its snapshot in graphkit's
snapshot index: without this they were recorded in the index of whoever ran the tests
(``~/.local/share/graphkit``), among the builds of their own history.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_snapshot_index_for_doctests(tmp_path_factory: pytest.TempPathFactory,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHKIT_HOME", str(tmp_path_factory.mktemp("graphkit-home")))
