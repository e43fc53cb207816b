"""The export formats and what they share: one module per format under
:mod:`graphkit.export.formats`, found by name.

A format is a module ``graphkit/export/formats/<name>.py`` (``node_link.py``
is ``--format node-link``) defining ``FORMAT``, a :class:`Format`. Nothing
else lists the formats, so adding one is adding one module; listing the names
imports none of them (``graphkit --help`` stays fast).
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from graphkit.core.errors import GraphkitError
from graphkit.core.files import (
    check_output,
    clean_leftovers,
    output_file,
    utf8_path,
    walk_folders,
    write_error,
    writer_prefix,
)

if TYPE_CHECKING:  # only named: `graphkit --help` and a kept rebuild need no pyarrow
    from graphkit.core.graph import GraphTables

# A status line on a terminal (see graphkit.cli.render.progress); a no-op when piped.
Progress = Callable[[str], None]

# The file a folder export writes first, so a rerun may replace the folder.
MARKER = "graphkit-export.json"


class ExportError(GraphkitError):
    """An export cannot be written where or how it was asked."""


@dataclass
class ExportReport:
    """What one export wrote."""

    format: str
    out: str  # the file or folder, or "-" for stdout
    nodes: dict[str, int] = field(default_factory=dict)
    edges: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # what a user should know (skips, encodings)
    # What was written in the format's own words ("3 traces, 40 spans"), where nodes
    # and edges would misname it; None: "N nodes and M edges".
    account: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A plain dict for ``--json`` output."""
        return {"format": self.format, "out": self.out, "nodes": dict(self.nodes),
                "edges": dict(self.edges), "seconds": round(self.seconds, 3),
                "notes": list(self.notes)}

    def said(self) -> str:
        """What was written, in one phrase: the format's own account, else the counts."""
        return self.account or (f"{sum(self.nodes.values())} nodes and "
                                f"{sum(self.edges.values())} edges")


@dataclass(frozen=True)
class Output:
    """Where an export goes: a file, a folder, or stdout (``path`` None).

    ``sources``: what the export reads (the snapshot folder), which it may not replace;
    ``private``: the graph holds message content, so what is written gets the
    snapshot's own mode (0600 files, a 0700 folder), not the umask's.
    """

    path: Path | None
    sources: tuple[Path, ...] = ()
    private: bool = False

    @property
    def name(self) -> str:
        """The path as the user gave it, or ``-``."""
        return "-" if self.path is None else str(self.path)

    @property
    def suffix(self) -> str:
        """The file suffix, lower case (``""`` for stdout)."""
        return "" if self.path is None else self.path.suffix.lower()

    @contextmanager
    def open_binary(self) -> Iterator[IO[bytes]]:
        """A binary stream; a file appears only once it is complete."""
        if self.path is None:
            yield sys.stdout.buffer
            sys.stdout.buffer.flush()
            return
        with _atomic_file(self.path, self.sources, self.private) as fh:
            yield fh

    @contextmanager
    def folder(self, fmt: str) -> Iterator[Path]:
        """A new folder to fill; it replaces ``path`` once complete."""
        if self.path is None:
            raise ExportError(f"format {fmt} writes a folder and cannot go to stdout",
                              hint="give a folder path as OUT")
        with _atomic_folder(self.path, self.sources, self.private) as tmp:
            yield tmp


@dataclass(frozen=True)
class Format:
    """One export format."""

    name: str  # what --format takes
    summary: str  # one line for --help
    write: Callable[[GraphTables, Output, Progress], ExportReport]
    folder: bool = False  # writes a folder (never stdout)
    # Reads a file written by ``write`` back into tables with the format's
    # owner tool (networkx); None where that takes a server (Neo4j).
    read: Callable[[Path], GraphTables] | None = None
    # ``write`` with message content included (--include-content); None where the
    # format writes what the snapshot holds, content or not.
    write_content: Callable[[GraphTables, Output, Progress], ExportReport] | None = None


def format_names() -> list[str]:
    """Every format's name, without importing any of them."""
    import graphkit.export.formats as pkg

    return sorted(m.name.replace("_", "-") for m in pkgutil.iter_modules(pkg.__path__)
                  if not m.name.startswith("_"))


# The front door's name for it (graphkit.export_formats()).
export_formats = format_names


def get_format(name: str) -> Format:
    """The format called ``name``; :class:`ExportError` listing the names if none is."""
    names = format_names()
    if name not in names:
        raise ExportError(f"unknown export format {name!r}",
                          hint="use one of " + ", ".join(names))
    module = importlib.import_module(f"graphkit.export.formats.{name.replace('-', '_')}")
    fmt = getattr(module, "FORMAT", None)
    if not isinstance(fmt, Format):  # a module in formats/ that forgot FORMAT: a bug
        raise TypeError(f"{module.__name__} defines no FORMAT")
    return fmt


def export_graph(graph: GraphTables, fmt: str, out: Path | str | None, *,
                 progress: Progress | None = None,
                 include_content: bool = False,
                 sources: Sequence[Path | str] = ()) -> ExportReport:
    """Write ``graph`` in format ``fmt`` to ``out`` (a path; ``"-"`` or None
    for stdout where the format is one file) and say what was written.
    ``include_content``: message text too, for a format that leaves it out unless asked.

    ``out`` may not be (or be inside) one of ``sources``, a snapshot or a transcript; a
    symbolic link's target is written. A graph that holds message content (or an export
    asked to include it) is written private (0600), as its snapshot is."""
    f = get_format(fmt)
    write = f.write
    if include_content:
        if f.write_content is None:
            raise ExportError(f"--include-content: the {fmt} format writes what the snapshot "
                              "holds (message text only from a snapshot built with "
                              "--include-content)", hint="leave out --include-content")
        write = f.write_content
    path = None if out is None or str(out) == "-" else Path(out)
    if path is not None:
        check_output(path, sources=sources, what="export")
    target = Output(path, tuple(Path(s) for s in sources),
                    include_content or holds_content(graph))
    t0 = time.perf_counter()
    report = write(graph, target, progress or (lambda _m: None))
    report.seconds = time.perf_counter() - t0
    return report


def export_snapshot(snapshot_dir: Path | str, fmt: str, out: Path | str | None, *,
                    progress: Progress | None = None,
                    include_content: bool = False) -> ExportReport:
    """Read the snapshot in ``snapshot_dir`` and export it (see :func:`export_graph`)."""
    from graphkit.snapshot import read_snapshot

    get_format(fmt)  # an unknown format fails before the snapshot is read
    if out is not None and str(out) != "-":
        check_output(out, sources=[snapshot_dir], what="export")  # before a long read
    if progress:
        progress(f"reading snapshot {snapshot_dir}")
    return export_graph(read_snapshot(Path(snapshot_dir)), fmt, out, progress=progress,
                        include_content=include_content, sources=[snapshot_dir])


def holds_content(graph: GraphTables) -> bool:
    """Whether ``graph`` carries message content: read from a snapshot built with
    ``--include-content``, or projected with its content properties kept."""
    if graph.meta.get("include_content"):
        return True
    content = graph.meta.get("content_properties") or {}
    return any(p in graph.nodes[t].table.column_names
               for t, props in content.items() if t in graph.nodes for p in props)


def write_marker(folder: Path, report: ExportReport, extra: dict[str, Any]) -> None:
    """The folder's ``graphkit-export.json``: format, counts and format notes."""
    data = {"format": report.format, "nodes": report.nodes, "edges": report.edges,
            "notes": report.notes, **extra}
    (folder / MARKER).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


@contextmanager
def _atomic_file(path: Path, sources: Sequence[Path], private: bool) -> Iterator[IO[bytes]]:
    if path.is_dir():
        raise ExportError("is a folder; this format writes one file", path=str(path),
                          hint="give a file name")
    # Through a pipe or device (never renamed over it); a full disk is one line.
    with output_file(path, public=not private, private=private, sources=sources,
                     what="export") as fh:
        yield fh


@contextmanager
def _atomic_folder(given: Path, sources: Sequence[Path], private: bool) -> Iterator[Path]:
    utf8_path(given, "export")  # Arrow writes the folder's tables
    # A link to a folder stands for that folder (as for every output): it is replaced,
    # the link kept.
    path = check_output(given, sources=sources, what="export")
    if path.exists() and not path.is_dir():
        raise ExportError("exists and is not a folder", path=str(given),
                          hint="this format writes a folder; give a new folder path")
    if path.is_dir() and any(path.iterdir()) and not (path / MARKER).is_file():
        raise ExportError("refusing to replace a folder that is not a graphkit export",
                          path=str(given), hint="choose an empty or new folder")
    foreign = _foreign_entry(path) if path.is_dir() else None
    if foreign is not None:
        # The whole folder is replaced: a user's file put beside the export's went too.
        raise ExportError(f"refusing to replace a graphkit export that holds {foreign!r}, "
                          "which the export did not write", path=str(given),
                          hint="move that file away, or export to another folder")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        clean_leftovers(path)  # what a killed export left here
        tmp = Path(tempfile.mkdtemp(prefix=writer_prefix(path), dir=path.parent))
    except OSError as exc:  # a file on the way (FileExistsError traceback), read-only
        raise write_error(exc, given) from None
    try:
        yield tmp
        if private:
            _make_private(tmp)
        else:
            tmp.chmod(0o777 & ~_umask())
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=writer_prefix(path, "old"), dir=path.parent))
            old.rmdir()
            path.rename(old)
            tmp.rename(path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(path)
    except OSError as exc:
        # A table's file that does not fit (disk full): Arrow's writers raise without
        # the file's name, which the CLI's last resort then blamed on stdout.
        shutil.rmtree(tmp, ignore_errors=True)
        raise write_error(exc, given) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# What a folder export writes: these at its top, and tables in its folders (and the
# report its README's neo4j-admin command leaves where it is run).
_EXPORT_TOP = frozenset({MARKER, "README.md", "schema.cypher", "nodes", "relationships",
                         "skipped", "import.report"})
_EXPORT_TABLES = (".csv", ".parquet")


def _foreign_entry(folder: Path) -> str | None:
    """The first entry of an existing export ``folder`` that an export does not write
    (None: every entry is the export's)."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.name not in _EXPORT_TOP:
            return entry.name
        if entry.is_dir(follow_symlinks=False):
            for inner in sorted(os.scandir(entry.path), key=lambda e: e.name):
                if not inner.is_file(follow_symlinks=False) or \
                        not inner.name.endswith(_EXPORT_TABLES):
                    return f"{entry.name}/{inner.name}"
        elif entry.name in ("nodes", "relationships", "skipped"):
            return entry.name  # a file where the export keeps a folder
    return None


def _make_private(folder: Path) -> None:
    """Folders 0700 and files 0600 below and at ``folder``: a snapshot's own modes."""
    for dirpath, _dirs, files in walk_folders(folder):
        os.chmod(dirpath, 0o700)
        for name in files:
            os.chmod(os.path.join(dirpath, name), 0o600)


def _umask() -> int:
    # The only way to read the umask is to set it; put it straight back.
    mask = os.umask(0)
    os.umask(mask)
    return mask
