"""What commands print: data on stdout (JSON Lines, CSV, TSV, aligned tables), notes and
warnings on stderr, and progress on a terminal."""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from graphkit.cli.options import quiet
from graphkit.core.errors import printable

if TYPE_CHECKING:
    from rich.console import Console

    from graphkit import Cost
    from graphkit.core.progress import Progress


def err(message: str) -> None:
    """A line on stderr (progress notes and warnings; stdout stays data), one line
    whatever a file name or id in it holds."""
    click.echo(printable(message), err=True)


@contextmanager
def progress(enabled: bool = True, console: Console | None = None) -> Iterator[Progress]:
    """Progress bars and notes (:mod:`graphkit.cli.bars`) while the block runs, on
    ``console`` or else on stderr when it is a terminal; nothing with ``--quiet``, when
    stderr is piped, or when not ``enabled``. Yields what library calls take as
    ``progress=`` (also callable with a string, as the older callbacks were)."""
    from graphkit.core.progress import NO_PROGRESS

    if not enabled or quiet() or (console is None and not is_terminal()):
        yield NO_PROGRESS
        return
    from graphkit.cli.bars import RichProgress

    with RichProgress(console) as shown:
        yield shown


def echo_json(obj: Any) -> None:
    """One JSON document on one line of stdout."""
    click.echo(json.dumps(obj, default=str))


def echo_records(records: Iterable[dict[str, Any]]) -> None:
    """JSON Lines on stdout, one record per line."""
    # One encoder for all: json.dumps with `default` makes one per record.
    encode = json.JSONEncoder(default=str).encode
    echo_lines(encode(rec) for rec in records)


def echo_lines(lines: Iterable[str], chunk: int = 4096) -> None:
    """Lines on stdout, written a few thousand at a time: one write per line costs
    more than making the line, and one write of all would hold a large answer back."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= chunk:
            click.echo("\n".join(batch))
            batch.clear()
    if batch:
        click.echo("\n".join(batch))


def shown(value: object) -> str:
    """``value`` as text for a person's screen: control characters as escapes
    (``\\x1b``, ``\\n``), so an id or path holding ESC cannot drive the terminal
    (set its title, clear it, recolour what follows) nor a newline split a line."""
    return printable(str(value))


def usd(cost: Cost) -> str:
    """A cost for a person: ``$1.2345``; ``$1.2345 + unpriced`` where some models have
    no price (what is priced, and that more is unknown); ``unpriced``."""
    if cost.known is not None:
        return f"${cost.known:,.4f}"
    priced = f"${cost.usd:,.4f} + " if cost.usd else ""
    return f"{priced}unpriced"


def tsv_line(cells: Sequence[object]) -> str:
    """One line of the TSV piped commands print: tabs and newlines inside a value
    become spaces (they would break the columns a pipe reads), other control
    characters escapes (:func:`shown`)."""
    return "\t".join(shown(str(c).replace("\t", " ").replace("\n", " ")) if c is not None
                     else "" for c in cells)


def _cell(value: object) -> str:
    # Tabs, newlines and other control characters would break the columns.
    text = "" if value is None else str(value)
    return text if text.isprintable() else "".join(c if c.isprintable() else " " for c in text)


def _width(text: str) -> int:
    if text.isascii():
        return len(text)
    from rich.cells import cell_len  # wide (CJK) and zero-width characters

    return cell_len(text)


def table_lines(columns: Sequence[str], rows: Iterable[Sequence[object]], *,
                right: Collection[str] = (), bold: bool = False) -> list[str]:
    """An aligned text table: the header, a rule, then one line per row, columns two
    spaces apart, ``right`` columns right-aligned, nothing cut. Time grows with the
    cells alone (a rich Table over 24k sessions took 7-8× the CPU of ``--json``).

    >>> for line in table_lines(["id", "n"], [["a", 1], ["bcd", 22]], right={"n"}):
    ...     print(line)
    id    n
    ───  ──
    a     1
    bcd  22
    """
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([_width(c)] + [_width(r[i]) for r in cells]) for i, c in enumerate(columns)]
    flags = [c in right for c in columns]

    def line(values: Sequence[str]) -> str:
        return "  ".join((" " * (w - _width(v)) + v) if r else (v + " " * (w - _width(v)))
                         for v, w, r in zip(values, widths, flags, strict=True)).rstrip()

    head = line(list(columns))
    out = [f"\x1b[1m{head}\x1b[0m" if bold else head, "  ".join("─" * w for w in widths)]
    out += [line(r) for r in cells]
    return out


def echo_table(columns: Sequence[str], rows: Iterable[Sequence[object]], *,
               right: Collection[str] = ()) -> None:
    """:func:`table_lines` on stdout (the header bold on a terminal)."""
    echo_lines(table_lines(columns, rows, right=right, bold=sys.stdout.isatty()))


def echo_csv(columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> None:
    """CSV on stdout: ``columns`` as the header, then each row's values (lists and
    maps as JSON text, missing values empty; text that starts like a spreadsheet
    formula quoted as OWASP says, :func:`~graphkit.core.text.csv_cell`)."""
    import csv
    import io

    from graphkit.core.text import csv_cell

    def cell(value: Any) -> Any:
        if value is None:
            return ""
        if isinstance(value, dict | list):
            value = json.dumps(value, default=str)
        return csv_cell(value) if isinstance(value, str) else value

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")

    def flush() -> None:  # in chunks, so a large answer streams
        click.echo(buf.getvalue(), nl=False)
        buf.seek(0)
        buf.truncate()

    w.writerow([csv_cell(c) for c in columns])
    flush()
    for i, r in enumerate(rows, 1):
        w.writerow([cell(r.get(c)) for c in columns])
        if i % 4096 == 0:
            flush()
    flush()


def is_terminal() -> bool:
    """Whether stderr is a terminal (progress is shown only there)."""
    return sys.stderr.isatty()
