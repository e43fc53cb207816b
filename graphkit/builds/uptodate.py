"""A rebuild with nothing changed: the previous snapshot stands, nothing is read or projected.

:class:`UpToDate` is the one place that decides it. After a build writes its snapshot,
:meth:`UpToDate.record` keeps, in the cache folder, what the build depended on: a key of
everything that shapes the output (the contract file's bytes, the options that shape it,
graphkit and parser versions, the sources as given) and the size, mtime and inode of every
file under the sources (transcripts, sidecars, row files alike, so a file added, deleted,
appended to or replaced is seen) — plus the same of the snapshot's manifest and side files,
so a snapshot rewritten or removed since is not trusted. :meth:`UpToDate.kept` compares;
only when all of it is equal is the recorded summary returned and the build skipped. Any
doubt (no record, a damaged or foreign one) means a full build.

This module imports nothing heavy (no pyarrow, pydantic, contract model or rich):
:func:`graphkit.builds.snapshot.build_snapshot` asks before it imports the build, so a
rebuild that finds nothing changed costs little more than the interpreter's start and a
walk of the sources, from the command line and a library call alike.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
import zlib
from array import array
from collections.abc import Iterable, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

from graphkit._version import __version__
from graphkit.builds.options import BuildOptions
from graphkit.builds.outputs import BuildOutputs
from graphkit.contract.search import contract_candidates
from graphkit.core.content import CONTENT_PATHS
from graphkit.core.files import open_regular
from graphkit.snapshot.format import MANIFEST
from graphkit.sources.transcripts.version import PARSER_VERSION

RECORD = "build-record.json.gz"
# The spliced build's merged tables (graphkit.builds.incremental.merged), below the cache folder:
# the record names the one the recorded snapshot was written from.
MERGED_FILE = "graph/graph-merged.arrow"
_RECORD_VERSION = 4  # 4: the options from BuildOptions.shaping (3: the inputs as a digest)


def _digest(path: Path) -> str | None:
    try:
        # Only a regular file (a FIFO given as --contract waited for a writer forever);
        # what is none is refused by the contract's loader, in words of its own.
        with os.fdopen(open_regular(path), "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except IsADirectoryError:
        return "folder"
    except OSError:
        return None


def contract_state(contract: Any) -> list[Any]:
    """What decides the contract: each candidate file's path and bytes' digest, without
    parsing it (a loaded contract given by a library caller: its path and spec)."""
    if hasattr(contract, "spec"):  # a LoadedContract, perhaps changed in memory
        return ["loaded", str(contract.path), contract.spec.model_dump_json()]
    return [[str(p.expanduser().resolve()), _digest(p)]
            for p in contract_candidates(str(contract))]


def build_key(sources: Sequence[Path], snapshot_dir: Path, options: BuildOptions) -> str:
    """A digest of everything besides the input files that decides the snapshot's bytes:
    the contract (:func:`contract_state`), the options that shape the output
    (:meth:`BuildOptions.shaping`), the versions, the sources and snapshot as given."""
    doc = {
        "record": _RECORD_VERSION, "graphkit": __version__, "parser": PARSER_VERSION,
        # What is content (left out without --include-content): a snapshot built under
        # another rule is not kept.
        "content": {k: [list(p) for p in v] for k, v in sorted(CONTENT_PATHS.items())},
        "contract": contract_state(options.contract),
        "sources": [str(Path(p).expanduser().resolve()) for p in sources],
        "snapshot": str(Path(snapshot_dir).expanduser().resolve()),
        "options": {k: str(v) for k, v in sorted(options.shaping().items())},
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def file_stat(path: str) -> list[int] | None:
    """:func:`stat_of` ``path``, or None when it cannot be stat'ed."""
    try:
        return stat_of(os.stat(path))
    except OSError:
        return None


def stat_of(st: os.stat_result) -> list[int]:
    """``[size, mtime_ns, inode, ctime_ns]``: what says a file is unchanged without reading
    it. The ctime too: a file rewritten in place with its size and mtime put back (``cp -p``
    of a backup over it, ``touch -r``) keeps its inode, but no one can set its ctime."""
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


_NO_STAT = [-1, -1, -1, -1]
# The walk lists folders by descriptor where the OS offers it (POSIX), by path elsewhere.
_BY_FD = os.scandir in os.supports_fd
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)


def _list_folder(folder: str, fd: int, stack: list[str], out: list[list[Any]]) -> None:
    """One folder of :func:`input_state`'s walk: its subfolders onto ``stack``, its files'
    stats onto ``out``. Listed through the folder's descriptor ``fd`` (open while its
    entries are stat'ed), each stat is an ``fstatat`` of a name in it: the kernel does not
    resolve the whole path again for each of ~9k files (~8% of the walk's CPU)."""
    try:
        entries = list(os.scandir(fd if _BY_FD else folder))
    except OSError:
        out.append([folder, *_NO_STAT])
        return
    pre = folder if folder.endswith(os.sep) else folder + os.sep  # as DirEntry.path
    for e in entries:
        path = pre + e.name
        try:
            if e.is_dir(follow_symlinks=False):  # as os.walk: no link loops
                stack.append(path)
                continue
            st = e.stat(follow_symlinks=True)  # stat_of, inlined: ~9k calls
            out.append([path, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns])
        except OSError:
            out.append([path, *_NO_STAT])


def input_state(sources: Sequence[Path]) -> list[list[Any]]:
    """``[path, *stat_of(file)]`` of every file under ``sources``, sorted; folders
    contribute their files (all of them: a new sidecar changes links too)."""
    out: list[list[Any]] = []
    for given in sources:
        root = str(Path(given).expanduser().resolve())
        if not os.path.isdir(root):
            out.append([root, *(file_stat(root) or _NO_STAT)])
            continue
        stack = [root]
        while stack:
            folder = stack.pop()
            try:
                fd = os.open(folder, _DIR_FLAGS) if _BY_FD else -1
            except OSError:
                out.append([folder, *_NO_STAT])  # unreadable now: never equal to before
                continue
            try:
                _list_folder(folder, fd, stack, out)
            finally:
                if _BY_FD:
                    os.close(fd)
    # By path alone (each path comes once, so the order is the lists' order): Python
    # compares str keys directly, where comparing the lists cost ~3× as much (9k files).
    out.sort(key=itemgetter(0))
    return out


def stat_bytes(flat: list[int]) -> bytes:
    """Stat numbers as int64s: a value at or beyond 2**63 (an inode number with its top
    bit set) wraps to its two's complement, so unsigned 64-bit stats keep their own
    bytes (all but 2**64 - 1, which meets the -1 of "no stat")."""
    try:
        return array("q", flat).tobytes()
    except OverflowError:
        top = 1 << 63
        return array("q", [v - (top << 1) if v >= top else v for v in flat]).tobytes()


class _Packed:
    """The last walk packed (:func:`packed_inputs`) and, once asked, its digest: the no-op
    check, the build record and the spliced build's state all ask of the very list."""

    __slots__ = ("digest", "inputs", "stats", "text")

    def __init__(self, inputs: Sequence[Sequence[Any]]) -> None:
        self.inputs = inputs
        self.text = "\0".join([row[0] for row in inputs])
        self.stats = stat_bytes([v for row in inputs for v in row[1:]])
        self.digest: str | None = None


_LAST: list[_Packed] = []


def _packed(inputs: Sequence[Sequence[Any]]) -> _Packed:
    if not (_LAST and _LAST[0].inputs is inputs):
        _LAST[:] = [_Packed(inputs)]
    return _LAST[0]


def packed_inputs(inputs: Sequence[Sequence[Any]]) -> tuple[str, bytes]:
    """:func:`input_state`'s list as its paths joined by NUL (no path holds one) and its
    stats as :func:`stat_bytes`."""
    got = _packed(inputs)
    return got.text, got.stats


def inputs_digest(inputs: Sequence[Sequence[Any]]) -> str:
    """A digest of :func:`input_state`'s list: the record keeps it instead of the list
    (8.7k ``[path, *stat]`` entries were 1.6 MB of JSON to encode, compress, decompress and
    decode in every build, for an equality test). SHA-256 of :func:`packed_inputs`:
    ~2.5 ms for 8.7k files where the list's JSON took ~20."""
    got = _packed(inputs)
    if got.digest is None:
        h = hashlib.sha256(b"inputs 1\0%d\0" % len(inputs))
        h.update(got.text.encode("utf-8", "surrogatepass"))
        h.update(got.stats)
        got.digest = h.hexdigest()
    return got.digest


_TAILS: list[Any] = []  # [inputs, root, text]: the last answer (asked twice per build)


def source_tails(root: str, inputs: list[list[Any]]) -> str:
    """The paths of :func:`input_state`'s ``inputs`` below ``root`` (a folder path ending in
    a separator), each without ``root`` but for its last separator, one per line and each
    line ending in a newline: one text that questions about all the files' names are
    searched in at once (a newline in a name can only add a match). Kept for the last
    ``inputs`` list (the very object: the build asks twice of one walk)."""
    if _TAILS and _TAILS[0] is inputs and _TAILS[1] == root:
        return str(_TAILS[2])
    cut = len(root) - 1
    text = "\n".join([row[0][cut:] for row in inputs if row[0].startswith(root)]) + "\n"
    _TAILS[:] = [inputs, root, text]
    return text


def output_state(snapshot_dir: Path, side_files: Sequence[Path | str],
                 tables: Iterable[str] = ()) -> list[Any]:
    """What the snapshot (its manifest, and the table files ``tables`` it names) and its
    side files (rejects, skipped lines) are now. The tables too: one truncated or
    rewritten since must not be kept as the snapshot every reader then refuses."""
    snap = Path(snapshot_dir)
    return [file_stat(str(snap / MANIFEST)), *[file_stat(str(p)) for p in side_files],
            *[file_stat(str(snap / rel)) for rel in sorted(tables)]]


_READ_RECORD: list[Any] = []  # [path, stat, doc]: read once per process while unchanged


def _read_record(cache_dir: Path) -> dict[str, Any] | None:
    path = str(cache_dir / RECORD)
    stat = file_stat(path)
    if stat is not None and _READ_RECORD[:2] == [path, stat]:
        return _READ_RECORD[2]
    # msgspec decodes the 1.4 MB record in half json's time, but importing it costs more
    # than that: used when a build has loaded it already, not by the no-op check.
    fast = sys.modules.get("msgspec")
    try:
        raw = gzip.decompress((cache_dir / RECORD).read_bytes())
        try:
            doc = fast.json.decode(raw) if fast is not None else json.loads(raw)
        except ValueError:  # msgspec refuses an escaped lone surrogate (a path not UTF-8)
            doc = json.loads(raw)
    except (OSError, ValueError, EOFError, zlib.error):  # msgspec.DecodeError: a ValueError
        return None
    doc = doc if isinstance(doc, dict) else None
    _READ_RECORD[:] = [path, stat, doc]
    return doc


class UpToDate:
    """The one "nothing changed, keep the snapshot" decision of a build of ``sources``
    into ``outputs`` with ``options`` (see the module doc), and its record once built.

    Made only where it applies (:meth:`applies`). Making it walks the sources once
    (:attr:`inputs`): the build then takes its files and their stat from that walk.
    """

    def __init__(self, sources: Sequence[Path], outputs: BuildOutputs,
                 options: BuildOptions) -> None:
        assert outputs.snapshot is not None and outputs.cache is not None
        self.sources = [Path(p) for p in sources]
        self.snapshot_dir, self.cache_dir = outputs.snapshot, outputs.cache
        self.outputs, self.granularity = outputs, options.granularity
        self.key = build_key(self.sources, self.snapshot_dir, options)
        self.inputs = input_state(self.sources)

    @staticmethod
    def applies(outputs: BuildOutputs, options: BuildOptions) -> bool:
        """Only a build from files into a snapshot alone keeps it when nothing changed
        (a store elsewhere is loaded each time; a partitioned build keeps no record)."""
        return (outputs.snapshot is not None and outputs.cache is not None
                and options.store == "snapshot" and not options.partitioned)

    def kept(self) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """The summary and skipped lines of a rebuild that keeps the snapshot as it is,
        when nothing changed since the recorded build (the snapshot is recorded in
        graphkit's snapshot index, as a build's is); else None: build."""
        from graphkit.snapshot.swap import tidy

        tidy(self.snapshot_dir)  # a killed build's folders go, even when the snapshot is kept
        doc = _read_record(self.cache_dir)
        try:
            if doc is None or doc.get("key") != self.key:
                return None
            side = [str(p) for p in doc["side_files"]]
            outputs = output_state(self.snapshot_dir, side, dict(doc["tables"]))
            if outputs[0] is None or doc.get("outputs") != outputs:
                return None
            if doc.get("inputs") != inputs_digest(self.inputs):
                return None
            summary, skipped = doc["summary"], doc["skipped"]
            made_by = doc["contract"]
            if not isinstance(summary, dict) or not isinstance(skipped, list):
                return None
            name, version, granularity = (str(made_by["name"]), int(made_by["version"]),
                                          str(doc["granularity"]))
        except (KeyError, TypeError, ValueError):
            return None
        summary, skipped = dict(summary), list(skipped)  # the record read stays as read
        if "transcripts" in summary:
            t = summary["transcripts"]
            summary["transcripts"] = {"files_parsed": 0,
                                      "files_reused": t["files_parsed"] + t["files_reused"]}
        summary["snapshot_reused"] = True
        summary.pop("index_note", None)
        summary.update(self.outputs.record_in_index(self.sources, name, version, granularity))
        return summary, skipped

    def record(self, contract: tuple[str, int], summary: dict[str, Any],
               skipped: list[dict[str, Any]], manifest: dict[str, Any] | None = None) -> None:
        """Remember what this build depended on and said (see the module doc).
        ``manifest``: the one just written to the snapshot (else it is read back for its
        tables)."""
        from graphkit.sources.transcripts.index import atomic_write

        side = [str(p) for p in self.outputs.side_files()]
        tables = (table_digests(self.snapshot_dir) if manifest is None
                  else manifest_tables(manifest))
        doc = {"key": self.key, "inputs": inputs_digest(self.inputs),
               "outputs": output_state(self.snapshot_dir, side, tables),
               "side_files": side, "contract": {"name": contract[0], "version": contract[1]},
               "granularity": self.granularity, "summary": summary, "skipped": skipped,
               "snapshot_path": str(self.snapshot_dir.resolve()),
               # Only a spliced build writes its snapshot from the merged tables.
               "merged": file_stat(str(self.cache_dir / MERGED_FILE))
               if "groups_projected" in (summary.get("transcripts") or {}) else None,
               "tables": tables}
        import msgspec

        # msgspec and gzip level 1: 16 ms where json and level 6 took 56 (9k input records).
        try:
            raw = msgspec.json.encode(doc, enc_hook=str)
        except UnicodeEncodeError:  # a path that is not UTF-8: json escapes it, and reads it
            raw = json.dumps(doc, default=str).encode()
        payload = gzip.compress(raw, 1, mtime=0)
        atomic_write(self.cache_dir / RECORD, lambda fh: fh.write(payload))


def manifest_tables(manifest: dict[str, Any]) -> dict[str, str]:
    """Each table file a manifest names and its SHA-256."""
    return {str(entry["file"]): str(entry["sha256"])
            for part in ("nodes", "edges") for entry in manifest[part].values()}


def table_digests(snapshot_dir: Path) -> dict[str, str]:
    """Each table file of the snapshot's manifest and its SHA-256 (empty if unreadable).
    Only ``nodes``/``edges`` are parsed: the inputs list (2 MB for 9k files) is skipped."""
    import msgspec

    try:
        data = (Path(snapshot_dir) / MANIFEST).read_bytes()
        try:
            raw = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
            parts = {p: msgspec.json.decode(raw[p]) for p in ("nodes", "edges")}
        except msgspec.DecodeError:  # an escaped lone surrogate (a path not UTF-8), NaN
            parts = json.loads(data)
        return manifest_tables(parts)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def recorded_tables(cache_dir: Path, merged: list[int] | None) -> dict[str, list[str]]:
    """The table files of the last recorded snapshot, as ``{file: [path, sha256]}``, when
    that snapshot is still as recorded and was written from the merged tables whose stat
    is ``merged`` (see :mod:`graphkit.builds.incremental.merged`); else empty."""
    doc = _read_record(cache_dir)
    try:
        if doc is None or merged is None or doc.get("merged") != merged:
            return {}
        snap = Path(str(doc["snapshot_path"]))
        if file_stat(str(snap / MANIFEST)) != doc["outputs"][0]:
            return {}
        return {str(rel): [str(snap / str(rel)), str(sha)]
                for rel, sha in dict(doc["tables"]).items()}
    except (KeyError, TypeError, ValueError, IndexError):
        return {}
