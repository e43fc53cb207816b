import pytest

from graphkit.core.errors import ContractError, GraphkitError, first_line


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ValueError("bad value\n  at column 3"), "bad value"),
        (ValueError("  \n padded\nmore"), "padded"),
        (KeyError(), "KeyError"),
        (RuntimeError(""), "RuntimeError"),
    ],
)
def test_first_line(exc: BaseException, expected: str) -> None:
    assert first_line(exc) == expected


def test_first_line_cut_to_length() -> None:
    assert first_line(ValueError("x" * 500), 300) == "x" * 300


def test_error_names_place_column_and_fix() -> None:
    e = ContractError("unknown column", path="c.yaml", line=4, column="x", hint="declare it")
    assert isinstance(e, GraphkitError)
    assert str(e) == "c.yaml:4: unknown column (column 'x'); declare it"
