"""Finding transcript files and telling Claude Code from Codex by their content.

Nothing here parses a whole transcript: the kind of a file is decided from its first few
lines (not its folder), so a rollout copied anywhere is still read as a rollout.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from graphkit.core.errors import SourceError
from graphkit.core.files import open_regular, read_file, walk_folders
from graphkit.core.text import is_text
from graphkit.core.text import storable_json as whole_text
from graphkit.core.transcript_kinds import CLAUDE_KEYS as _CLAUDE_KEYS
from graphkit.core.transcript_kinds import CLAUDE_TYPES as _CLAUDE_TYPES
from graphkit.core.transcript_kinds import CODEX_TYPES as _CODEX_TYPES
from graphkit.core.transcript_kinds import kind_of_object as _kind_of_object

_SNIFF_LINES = 20


# JSON may escape half of a UTF-16 pair alone (JavaScript writes one when it cuts a string
# inside an emoji); Python reads it as a lone surrogate, which no UTF-8 writer (Arrow,
# Parquet, the snapshot) accepts. It becomes U+FFFD, as undecodable bytes do elsewhere.
_ESCAPED_SURROGATE = re.compile(r"\\[uU][dD][89a-fA-F]")
# Bytes json.loads reads into lone surrogates too: it decodes with "surrogatepass", so a
# surrogate written as UTF-8 bytes (ED A0-BF ..) passes, as do unpaired halves in UTF-16
# or UTF-32 text (which it detects by a BOM or zero bytes up front).
_ENCODED_SURROGATE = re.compile(b"\xed[\xa0-\xbf]")


def json_document(raw: str | bytes, lone: list[int] | None = None, line: int = 1) -> Any:
    """:func:`json.loads` of a transcript line or document, every lone surrogate in its
    strings and keys made U+FFFD; raises what json.loads raises (RecursionError too).
    ``line`` goes to ``lone`` when a lone surrogate was replaced, so the build can say
    how many lines lost text, and where (as the row files' reader does)."""
    value = json.loads(raw)
    if isinstance(raw, str):
        maybe = _ESCAPED_SURROGATE.search(raw) is not None
    else:
        maybe = bool(_ESCAPED_SURROGATE.search(raw.decode("latin-1"))
                     or _ENCODED_SURROGATE.search(raw) or 0 in raw[:4]
                     or raw[:2] in (b"\xff\xfe", b"\xfe\xff"))
    if not maybe:
        return value
    if lone is not None and holds_lone_surrogate(value):
        lone.append(line)
    return whole_text(value)


def holds_lone_surrogate(value: Any) -> bool:
    """Whether a parsed JSON value holds half of a surrogate pair in a string or key
    (only asked of the rare lines whose bytes may hold one: a pair, ``\\ud83d\\ude00``,
    matches the same pattern and is whole text)."""
    return not is_text(json.dumps(value, ensure_ascii=False))


def _kind_of_deep_line(raw: bytes) -> str | None:
    """The kind of a line too deeply nested to parse, from the keys it names: its parser
    will report it as a skipped line, which it can only do once the file is known."""
    if b'"payload"' in raw and any(f'"{t}"'.encode() in raw for t in _CODEX_TYPES):
        return "codex"
    if any(f'"{k}"'.encode() in raw for k in _CLAUDE_KEYS):
        return "claude"
    return None


def _msgspec_decoder() -> Any:
    import msgspec

    return msgspec.json.Decoder(float_hook=float).decode


# msgspec reads a line 3-4x faster than json.loads, to the same value; what it refuses
# (NaN, a BOM, lone surrogates, invalid UTF-8) goes to json.loads as before. Only for
# lines with few brackets: msgspec's nesting limit (~1000) is not json.loads' (the
# recursion limit less the stack in use), and a line json.loads finds too deep is
# judged by its keys (_kind_of_deep_line), not by its value.
_DECODE = _msgspec_decoder()
_FEW_BRACKETS = 200


def _line_kind(raw: bytes) -> str | None:
    """The kind one line says (None: not JSON, or no kind), as json.loads reads it."""
    if raw.count(b"[") + raw.count(b"{") < _FEW_BRACKETS:
        try:
            return _kind_of_object(_DECODE(raw))
        except Exception:  # json.loads gives the verdict
            pass
    try:
        return _kind_of_object(json.loads(raw))
    except ValueError:
        return None
    except RecursionError:
        return _kind_of_deep_line(raw)


def sniff_kind(name: str, data: bytes) -> str | None:
    """Return "claude", "codex" or None for a file's name and (leading) bytes."""
    if name.endswith(".json"):
        try:
            return _kind_of_object(json.loads(data))
        except (ValueError, RecursionError):
            return None
    start = 0
    for _ in range(_SNIFF_LINES):  # line by line: the first nearly always decides
        end = data.find(b"\n", start)
        kind = _line_kind(data[start:] if end < 0 else data[start:end])
        if kind is not None:
            return kind
        if end < 0:
            return None
        start = end + 1
    return None


# At most this much of a file is read to tell what it is: a file with no newline in its
# first gigabyte was read whole (twice over: 2.2 GB for 1 GiB) just to be told apart.
_SNIFF_BYTES = 4 << 20


def file_kind(path: Path) -> str | None:
    """"claude", "codex" or None for the file at ``path``, from at most its first
    ``_SNIFF_BYTES``: whole lines are parsed; a first line longer than that (or a
    ``.json`` document) is judged by the keys it names, as a line too deep to parse is."""
    try:
        if path.name.endswith(ZSTD):
            head = unzstd_head(path, _SNIFF_BYTES + 1)
        else:
            with os.fdopen(open_regular(path), "rb") as fh:
                head = fh.read(_SNIFF_BYTES + 1)
    except OSError:
        return None
    whole = len(head) <= _SNIFF_BYTES
    head = _utf8_head(head, whole)
    if whole:
        return sniff_kind(path.name, head)
    complete = head[:head.rfind(b"\n") + 1]
    if complete and path.suffix != ".json":
        return sniff_kind(path.name, complete)
    return _kind_of_deep_line(head) or _kind_of_cut_line(head)


_TYPE_KEY = re.compile(rb'"type"\s*:\s*"([^"\\]{1,64})"')


def _kind_of_cut_line(head: bytes) -> str | None:
    """The kind of a first line cut at the sniffing bound that names none of the keys
    :func:`_kind_of_deep_line` looks for: by the record ``type`` it starts with (a
    Claude file may open with a ``file-history-snapshot`` of megabytes), or a Claude
    export's ``loglines``."""
    m = _TYPE_KEY.search(head, 0, 4096)
    kind = m.group(1).decode("utf-8", "replace") if m else None
    if kind in _CLAUDE_TYPES:
        return "claude"
    if kind in _CODEX_TYPES and b'"payload"' in head:
        return "codex"
    return "claude" if b'"loglines"' in head else None


def _utf8_head(head: bytes, whole: bool) -> bytes:
    """:func:`as_utf8` of a file's first bytes (cut anywhere: a UTF-16/32 character may
    be split at the end); unchanged if they are no text in their encoding."""
    for cut in range(1 if whole else 4):
        try:
            return as_utf8(head[:len(head) - cut])
        except UnicodeError:
            continue
    return head


# Codex's cold-rollout compression ([features] local_thread_store_compression) replaces an
# idle rollout-*.jsonl by rollout-*.jsonl.zst; a plain .jsonl beside it is the newer copy.
ZSTD = ".jsonl.zst"


def unzstd(data: bytes) -> bytes:
    """The bytes a zstd file holds (every frame); OSError for bytes that are not zstd."""
    import io

    import zstandard

    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data),
                                                        read_across_frames=True) as reader:
            return reader.read()
    except zstandard.ZstdError as exc:
        raise OSError(0, f"not zstd data that can be decompressed ({exc})") from None


def unzstd_head(path: Path, size: int) -> bytes:
    """At most ``size`` bytes of what the zstd file at ``path`` holds (to tell what it is
    without decompressing all of it); OSError for a file that is not zstd."""
    import zstandard

    with os.fdopen(open_regular(path), "rb") as fh:
        try:
            with zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True,
                                                            closefd=False) as reader:
                chunks, left = [], size
                while left > 0 and (chunk := reader.read(min(left, 1 << 20))):
                    chunks.append(chunk)
                    left -= len(chunk)
                return b"".join(chunks)
        except zstandard.ZstdError as exc:
            raise OSError(0, f"not zstd data that can be decompressed ({exc})") from None


def candidates(root: Path) -> Iterator[Path]:
    """Yield transcript-looking files below ``root`` in a stable (sorted) order.

    Skipped on purpose: sidecars (``*.meta.json``, read with their agent file), workflow
    journals and other non-agent files inside ``subagents/``.
    """
    # Here, not at the top: `graphkit build` with no SOURCE asks default_transcript_roots
    # before deciding anything, and a rebuild that changes nothing never lists candidates.
    from graphkit.sources.row_files import unreadable_folder

    top = os.fspath(root)
    for dirpath, dirnames, filenames in walk_folders(root, onerror=unreadable_folder):
        dirnames.sort()
        # os.walk's dirpath is ``top`` joined with the folders below it: their names by
        # string (a Path per folder cost more than the walk itself).
        in_subagents = ("subagents" in dirpath[len(top):].split(os.sep)
                        or os.path.basename(dirpath) == "subagents")
        folder = None
        names = set(filenames)
        for name in sorted(filenames):
            if name.endswith(ZSTD):
                if name[:-4] in names:
                    continue  # the plain rollout beside it wins
            elif not name.endswith((".jsonl", ".json")) or name.endswith(".meta.json"):
                continue
            if in_subagents and not name.startswith("agent-"):
                continue
            if folder is None:
                folder = Path(dirpath)
            yield folder / name


def transcript_kind(path: Path) -> str | None:
    """Return "claude" or "codex" when ``path`` (a file or folder) holds transcripts, else None.

    A folder holding both kinds reports the kind of most of its first 50 transcripts;
    :func:`read_transcripts` detects every file on its own either way.
    """
    path = Path(path)
    if path.is_file():
        return file_kind(path)
    if not path.is_dir():
        return None
    counts = {"claude": 0, "codex": 0}
    seen = 0
    for candidate in candidates(path):
        kind = file_kind(candidate)
        if kind is not None:
            counts[kind] += 1
            seen += 1
            if seen >= 50:
                break
    if not seen:
        return None
    return "codex" if counts["codex"] > counts["claude"] else "claude"


def default_transcript_roots() -> list[Path]:
    """Return the transcript folders of the current user that exist.

    Claude Code keeps its data in ``$CLAUDE_CONFIG_DIR`` (default ``~/.claude``), Codex in
    ``$CODEX_HOME`` (default ``~/.codex``); ``~`` is ``$HOME``.
    """
    home = Path(os.environ.get("HOME") or Path.home())
    claude = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude").expanduser()
    codex = Path(os.environ.get("CODEX_HOME") or home / ".codex").expanduser()
    # claude/jobs: background jobs' state.json, which names a /fork's parent session.
    roots = [claude / "projects", claude / "jobs", codex / "sessions",
             codex / "archived_sessions"]
    return [r for r in roots if r.is_dir()]


# How a file's first bytes say it is not plain UTF-8: a byte-order mark, or the zero
# bytes of UTF-16/32 text that starts with "{" (json.detect_encoding's rules).
_MAYBE_ENCODED = frozenset(b"\xef\xff\xfe\x00")


def as_utf8(data: bytes) -> bytes:
    """A transcript's bytes as UTF-8 without a byte-order mark: a UTF-8 BOM is dropped
    (it made the first line "not valid JSON"), UTF-16 and UTF-32 text (by its BOM, or
    its zero bytes) is decoded and written as UTF-8 (it was read as one garbled line).
    Unpaired UTF-16 halves stay as encoded surrogates, which the line parser makes
    U+FFFD and counts. :class:`UnicodeError` naming the encoding if the bytes are not
    whole text in it.

    >>> import codecs
    >>> as_utf8(codecs.BOM_UTF8 + b"{}"), as_utf8('{"a": 1}'.encode("utf-16"))
    (b'{}', b'{"a": 1}')
    """
    if not data or (data[0] not in _MAYBE_ENCODED and data[1:2] != b"\x00"):
        return data  # plain UTF-8: nearly every file, one look at two bytes
    encoding = json.detect_encoding(data[:4])
    if encoding == "utf-8":
        return data
    if encoding == "utf-8-sig":
        return data[3:]
    try:
        text = data.decode(encoding, "surrogatepass")
    except UnicodeDecodeError as exc:
        name = encoding.upper().replace("-BE", " big-endian").replace("-LE", " little-endian")
        raise UnicodeError(f"a {name} file that is not whole {name} text (at byte "
                           f"{exc.start}); file skipped") from None
    return text.lstrip("\ufeff").encode("utf-8", "surrogatepass")


def read_meta(agent_file: Path
              ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, int | None]:
    """Return the sidecar ``agent-<id>.meta.json`` of an agent file, its fingerprint, and
    the line of its first lone surrogate made U+FFFD (None: none was), which the build
    counts and names as it does a transcript line's."""
    meta_path = agent_file.with_name(agent_file.name.split(".", 1)[0] + ".meta.json")
    try:
        st, data = read_file(meta_path)  # one open and fstat: no second path lookup
    except OSError:
        return None, None, None
    try:
        meta = _DECODE(data) if data.count(b"{") + data.count(b"[") < _FEW_BRACKETS else None
    except Exception:  # json_document reads it, or says why not
        meta = None
    lone: list[int] = []
    if meta is None:
        try:
            meta = json_document(data, lone)
        except (ValueError, RecursionError):
            meta = None
    fingerprint = {"path": str(meta_path), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                   "sha256": hashlib.sha256(data).hexdigest()}
    if not isinstance(meta, dict):
        return None, fingerprint, None  # not used: nothing of it was repaired into the graph
    return meta, fingerprint, (lone_surrogate_line(data) if lone else None)


# A \u escape of half a surrogate pair, with the backslashes before it (an even run of
# them is escaped backslashes, and the "u" is then plain text); and of a low half.
_SURROGATE_ESCAPE = re.compile(r"(\\+)u([dD][89a-fA-F][0-9a-fA-F]{2})")
_LOW_HALF_ESCAPE = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def lone_surrogate_line(data: bytes) -> int:
    """The line of a JSON document's first lone surrogate: an escaped half without its
    other half, or one written as UTF-8 bytes (ED A0-BF ..); 1 when it is found in
    neither form (a UTF-16 document's unpaired half)."""
    text = data.decode("latin-1")  # one char per byte: offsets are the bytes'
    first = len(text)
    pair_end = -1  # the end of the last whole pair: its low half is no lone one
    for m in _SURROGATE_ESCAPE.finditer(text):
        if len(m.group(1)) % 2 == 0 or m.start() < pair_end:
            continue
        if int(m.group(2), 16) < 0xDC00 and _LOW_HALF_ESCAPE.match(text, m.end()):
            pair_end = m.end() + 6
            continue
        first = m.end(1) - 1
        break
    encoded = _ENCODED_SURROGATE.search(data)
    if encoded is not None:
        first = min(first, encoded.start())
    return text.count("\n", 0, first) + 1 if first < len(text) else 1


def transcript_files(paths: Sequence[Path]) -> list[Path]:
    """Return the transcript files under the user's paths, each once, in path order."""
    found: dict[str, Path] = {}
    for given in paths:
        path = Path(given).expanduser()
        if path.is_file():
            resolved = path.resolve()
            found.setdefault(str(resolved), resolved)
        elif path.is_dir():
            # Resolve the root once; files found below it are then absolute already.
            for candidate in candidates(path.resolve()):
                found.setdefault(str(candidate), candidate)
        else:
            raise SourceError("no such file or folder", path=str(path),
                              hint="pass a Claude projects folder, a Codex sessions folder "
                                   "or a transcript file")
    return [found[k] for k in sorted(found)]


def not_a_transcript(path: Path, data: bytes) -> str:
    app = None
    if path.suffix == ".json":
        try:
            doc = json.loads(data)
            app = doc.get("app") if isinstance(doc, dict) else None
        except (ValueError, RecursionError):
            return "not valid JSON; not a Claude Code or Codex transcript, file ignored"
    if isinstance(app, str):
        what = f"{'an' if app[:1] in 'AEIOU' else 'a'} {app} export"
    else:
        what = "not a Claude Code or Codex transcript"
    return f"{what} (no Claude entries or Codex session lines found); file ignored"
