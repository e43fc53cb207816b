"""The one helper the hostile-contract tests share (tests/contract/test_hostile_contracts.py,
tests/test_hostile_contract_rules.py): a contract written from text and refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphkit.contract.loader import load_contract
from graphkit.core.errors import ContractError


def write_contract(tmp_path: Path, text: str) -> Path:
    """``text`` written to ``tmp_path/c.yaml`` (UTF-8), as a user keeps a contract."""
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def refused(tmp_path: Path, text: str, line: int | None = None) -> ContractError:
    """The :class:`ContractError` loading ``text`` raises: it names the file, is one
    line whatever the contract held, and (if ``line`` is given) names that line."""
    path = write_contract(tmp_path, text)
    with pytest.raises(ContractError) as info:
        load_contract(str(path))
    assert info.value.path == str(path), str(info.value)
    assert "\n" not in str(info.value)
    if line is not None:
        assert info.value.line == line, str(info.value)
    return info.value
