"""Read users' local agent history (Claude Code transcripts, Codex rollouts) as message rows.

Entry point: :func:`read_transcripts`. It walks the given files/folders, detects each file's
kind from its content (not its folder), parses it (:mod:`.claude`, :mod:`.codex`), and
settles cross-file facts (:mod:`._resolve`). Nothing is ever written into the transcript
folders.

Incremental index (``cache_dir``): one JSON file maps each input file to its size,
mtime, sha256, its facts and a Parquet file of the rows it produced. A file whose size and
mtime are unchanged is not even opened; a file whose bytes hash the same is not parsed.
Cross-file resolution always runs over all files, so the result equals a full read.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphkit.core.errors import SourceError
from graphkit.sources._resolve import Combiner, ParsedFile, resolve
from graphkit.sources._rows import PRE_SCHEMA, FileParse
from graphkit.sources.claude import claude_layout, parse_claude
from graphkit.sources.codex import parse_codex

# Bump when parsing changes what a file yields: older cache entries are then ignored.
PARSER_VERSION = 2  # 2: usage and continuation facts
INDEX_NAME = "transcripts-index.json"
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context",
                          "compacted"})
_CLAUDE_KEYS = ("sessionId", "parentUuid", "isSidechain", "leafUuid")
_SNIFF_LINES = 5


@dataclass
class SkippedLine:
    """A line (or, with line 0, a whole file) that gave no rows, and why."""

    path: str
    line: int
    reason: str


@dataclass
class TranscriptRows:
    """Rows read from transcripts, with what was skipped and what the cache saved."""

    table: pa.Table
    skipped: list[SkippedLine] = field(default_factory=list)
    files_read: int = 0
    files_reused: int = 0
    fingerprints: list[dict[str, Any]] = field(default_factory=list)


def _kind_of_object(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("loglines"), list):
        return "claude"
    if obj.get("type") in _CODEX_TYPES and "payload" in obj:
        return "codex"
    if "type" not in obj and "id" in obj and "timestamp" in obj and len(obj) <= 4:
        return "codex"  # the bare {id, timestamp} header of very old rollouts
    if any(k in obj for k in _CLAUDE_KEYS):
        return "claude"
    return None


def sniff_kind(name: str, data: bytes) -> str | None:
    """Return "claude", "codex" or None for a file's name and (leading) bytes."""
    if name.endswith(".json"):
        try:
            return _kind_of_object(json.loads(data))
        except ValueError:
            return None
    for raw in data.split(b"\n", _SNIFF_LINES)[:_SNIFF_LINES]:
        try:
            kind = _kind_of_object(json.loads(raw))
        except ValueError:
            continue
        if kind is not None:
            return kind
    return None


def _file_kind(path: Path) -> str | None:
    try:
        if path.suffix == ".json":
            return sniff_kind(path.name, path.read_bytes())
        with path.open("rb") as fh:
            head = b"".join(fh.readline() for _ in range(_SNIFF_LINES))
        return sniff_kind(path.name, head)
    except OSError:
        return None


def _candidates(root: Path) -> Iterator[Path]:
    """Yield transcript-looking files below ``root`` in a stable (sorted) order.

    Skipped on purpose: sidecars (``*.meta.json``, read with their agent file), workflow
    journals and other non-agent files inside ``subagents/``, and ``agent-acompact-*``
    compaction runs (see :mod:`graphkit.sources.claude`).
    """
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        in_subagents = "subagents" in Path(dirpath).relative_to(root).parts or (
            Path(dirpath).name == "subagents")
        for name in sorted(filenames):
            if not name.endswith((".jsonl", ".json")) or name.endswith(".meta.json"):
                continue
            if name.startswith("agent-acompact"):
                continue
            if in_subagents and not name.startswith("agent-"):
                continue
            yield Path(dirpath) / name


def transcript_kind(path: Path) -> str | None:
    """Return "claude" or "codex" when ``path`` (a file or folder) holds transcripts, else None.

    A folder holding both kinds reports the kind of most of its first 50 transcripts;
    :func:`read_transcripts` detects every file on its own either way.
    """
    path = Path(path)
    if path.is_file():
        return _file_kind(path)
    if not path.is_dir():
        return None
    counts = {"claude": 0, "codex": 0}
    seen = 0
    for candidate in _candidates(path):
        kind = _file_kind(candidate)
        if kind is not None:
            counts[kind] += 1
            seen += 1
            if seen >= 50:
                break
    if not seen:
        return None
    return "codex" if counts["codex"] > counts["claude"] else "claude"


def default_transcript_roots() -> list[Path]:
    """Return the transcript folders of the current user that exist (honours ``$HOME``)."""
    home = Path(os.environ.get("HOME") or Path.home())
    roots = [home / ".claude" / "projects", home / ".codex" / "sessions",
             home / ".codex" / "archived_sessions"]
    return [r for r in roots if r.is_dir()]


def _parse(path: Path, kind: str, data: bytes) -> FileParse:
    parse = parse_claude(path, data) if kind == "claude" else parse_codex(path, data)
    # Facts go through JSON in the cache; do the same here so fresh and cached agree.
    parse.facts = json.loads(json.dumps(parse.facts, sort_keys=True))
    return parse


def _read_meta(agent_file: Path) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Return the sidecar ``agent-<id>.meta.json`` of an agent file and its fingerprint."""
    meta_path = agent_file.with_name(agent_file.name.split(".", 1)[0] + ".meta.json")
    try:
        data = meta_path.read_bytes()
        stat = meta_path.stat()
    except OSError:
        return None, None
    try:
        meta = json.loads(data)
    except ValueError:
        meta = None
    fingerprint = {"path": str(meta_path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                   "sha256": hashlib.sha256(data).hexdigest()}
    return (meta if isinstance(meta, dict) else None), fingerprint


class _Index:
    """The incremental index: ``cache_dir/transcripts-index.json`` plus one Parquet per file."""

    def __init__(self, cache_dir: Path) -> None:
        self.dir = cache_dir
        self.rows_dir = cache_dir / "rows"
        self.entries: dict[str, dict[str, Any]] = {}
        try:
            doc = json.loads((cache_dir / INDEX_NAME).read_text(encoding="utf-8"))
            if doc.get("parser") == PARSER_VERSION and isinstance(doc.get("entries"), dict):
                self.entries = doc["entries"]
        except (OSError, ValueError, AttributeError):
            self.entries = {}  # no index yet, or an unreadable one: rebuild it

    def load(self, key: str) -> FileParse | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        try:
            # Single-threaded: these files are small, and thread start-up dominates.
            table = pq.ParquetFile(self.rows_dir / entry["rows"]).read(use_threads=False)
        except (OSError, KeyError, pa.ArrowException):
            return None
        if not table.schema.equals(PRE_SCHEMA):
            return None
        skipped = [(int(n), str(r)) for n, r in entry.get("skipped", [])]
        return FileParse(entry["kind"], table, entry.get("facts", {}), skipped)

    def store(self, key: str, fingerprint: dict[str, Any], parse: FileParse) -> None:
        self.rows_dir.mkdir(parents=True, exist_ok=True)
        name = (hashlib.sha256(key.encode()).hexdigest()[:16] + "-"
                + fingerprint["sha256"][:16] + ".parquet")
        _atomic_write(self.rows_dir / name,
                      lambda fh: pq.write_table(parse.table, fh, write_statistics=False))
        old = self.entries.get(key, {}).get("rows")
        if old and old != name:
            (self.rows_dir / old).unlink(missing_ok=True)
        self.entries[key] = {
            "size": fingerprint["size"], "mtime_ns": fingerprint["mtime_ns"],
            "sha256": fingerprint["sha256"], "kind": parse.kind, "rows": name,
            "facts": parse.facts, "skipped": [list(s) for s in parse.skipped],
        }

    def touch(self, key: str, fingerprint: dict[str, Any]) -> None:
        self.entries[key].update(size=fingerprint["size"], mtime_ns=fingerprint["mtime_ns"])

    def save(self) -> None:
        for key in [k for k in self.entries if not os.path.exists(k)]:
            rows = self.entries.pop(key).get("rows")
            if rows:
                (self.rows_dir / rows).unlink(missing_ok=True)
        doc = {"parser": PARSER_VERSION, "entries": self.entries}
        payload = json.dumps(doc, sort_keys=True).encode("utf-8")
        _atomic_write(self.dir / INDEX_NAME, lambda fh: fh.write(payload))


def _atomic_write(target: Path, write: Any) -> None:
    """Write via a temp file in the same folder and ``os.replace``: readers never see half."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _inputs(paths: Sequence[Path]) -> list[Path]:
    """Return the transcript files under the user's paths, each once, in path order."""
    found: dict[str, Path] = {}
    for given in paths:
        path = Path(given).expanduser()
        if path.is_file():
            resolved = path.resolve()
            found.setdefault(str(resolved), resolved)
        elif path.is_dir():
            # Resolve the root once; files found below it are then absolute already.
            for candidate in _candidates(path.resolve()):
                found.setdefault(str(candidate), candidate)
        else:
            raise SourceError("no such file or folder", path=str(path),
                              hint="pass a Claude projects folder, a Codex sessions folder "
                                   "or a transcript file")
    return [found[k] for k in sorted(found)]


def _check_cache_dir(cache_dir: Path, paths: Sequence[Path]) -> None:
    cache = cache_dir.expanduser().resolve()
    for given in paths:
        root = Path(given).expanduser().resolve()
        folder = root if root.is_dir() else root.parent
        if cache == folder or folder in cache.parents:
            raise SourceError("the cache folder is inside a transcript folder",
                              path=str(cache_dir),
                              hint=f"choose a cache folder outside {folder}; graphkit never "
                                   "writes into transcript folders")


def read_transcripts(
    paths: Sequence[Path],
    *,
    strict: bool = False,
    since: dt.datetime | None = None,
    cache_dir: Path | None = None,
) -> TranscriptRows:
    """Return message rows (``MESSAGES_SCHEMA``) for Claude and Codex transcripts under ``paths``.

    ``strict`` turns the first skipped line into a :class:`SourceError`; ``since`` keeps rows
    created at or after it (a naive datetime is UTC); ``cache_dir`` holds the incremental
    index (must lie outside the transcript folders).
    """
    if cache_dir is not None:
        _check_cache_dir(Path(cache_dir), paths)
    files = _inputs(paths)
    index = _Index(Path(cache_dir)) if cache_dir is not None else None
    result = TranscriptRows(table=pa.table({}))
    parsed: list[ParsedFile] = []
    combined = Combiner()

    for path in files:
        got = _load_or_parse(path, index, result, strict)
        if got is None:
            continue
        parse, fingerprint = got
        result.fingerprints.append(fingerprint)
        for line, reason in parse.skipped:
            _skip(result, strict, SkippedLine(str(path), line, reason))
        meta = None
        if parse.kind == "claude" and claude_layout(path).agent_id:
            meta, meta_print = _read_meta(path)
            if meta_print:
                result.fingerprints.append(meta_print)
        parsed.append(ParsedFile(str(path), parse, meta))
        combined.add(parse)

    if index:
        index.save()
    table = resolve(parsed, combined)
    if since is not None:
        when = since if since.tzinfo else since.replace(tzinfo=dt.UTC)
        table = table.filter(pc.greater_equal(
            table["message_created_at"], pa.scalar(when, pa.timestamp("us", tz="UTC"))))
    result.table = table
    return result


def _load_or_parse(path: Path, index: _Index | None, result: TranscriptRows,
                   strict: bool) -> tuple[FileParse, dict[str, Any]] | None:
    """Return a file's parse (from the index when unchanged) and fingerprint; None if unread."""
    key = str(path)
    try:
        stat = path.stat()
    except OSError as exc:
        _skip(result, strict, SkippedLine(str(path), 0, f"cannot read file: {exc.strerror}"))
        return None
    entry = index.entries.get(key) if index else None
    if index and entry and (entry["size"], entry["mtime_ns"]) == (stat.st_size,
                                                                 stat.st_mtime_ns):
        cached = index.load(key)
        if cached is not None:
            result.files_reused += 1
            return cached, {"path": str(path), "size": stat.st_size,
                            "mtime_ns": stat.st_mtime_ns, "sha256": entry["sha256"]}
    try:
        data = path.read_bytes()
    except OSError as exc:
        _skip(result, strict, SkippedLine(str(path), 0, f"cannot read file: {exc.strerror}"))
        return None
    fingerprint = {"path": str(path), "size": len(data), "mtime_ns": stat.st_mtime_ns,
                   "sha256": hashlib.sha256(data).hexdigest()}
    if index and entry and entry["sha256"] == fingerprint["sha256"]:
        cached = index.load(key)  # touched but unchanged: no need to parse again
        if cached is not None:
            index.touch(key, fingerprint)
            result.files_reused += 1
            return cached, fingerprint
    kind = sniff_kind(path.name, data)
    if kind is None:
        _skip(result, strict, SkippedLine(str(path), 1, _not_a_transcript(path, data)))
        return None
    parse = _parse(path, kind, data)
    result.files_read += 1
    if index:
        index.store(key, fingerprint, parse)
    return parse, fingerprint


def _not_a_transcript(path: Path, data: bytes) -> str:
    app = None
    if path.suffix == ".json":
        try:
            doc = json.loads(data)
            app = doc.get("app") if isinstance(doc, dict) else None
        except ValueError:
            return "not valid JSON; not a Claude Code or Codex transcript, file ignored"
    if isinstance(app, str):
        what = f"{'an' if app[:1] in 'AEIOU' else 'a'} {app} export"
    else:
        what = "not a Claude Code or Codex transcript"
    return f"{what} (no Claude entries or Codex session lines found); file ignored"


def _skip(result: TranscriptRows, strict: bool, skipped: SkippedLine) -> None:
    if strict:
        raise SourceError(skipped.reason, path=skipped.path, line=skipped.line or None,
                          hint="fix or remove that line, or read without --strict to skip it")
    result.skipped.append(skipped)
