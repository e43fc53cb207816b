"""Which files a tool call read or wrote: the ``touched_files`` column.

Every source gets it (HypAware rows, row files, transcripts), computed from a
row's ``tool_name``, ``tool_args`` and ``cwd``, unless the source already has
its own ``touched_files`` column. ``tool_args`` is message content (a Write's
arguments hold the whole file), so it is read for this and dropped again:
only the paths leave this module.

The column holds JSON text, one element per file, or null::

    [{"path": "/home/dev/src/app/main.py", "reads": 0, "writes": 1}]

What counts:

- Claude ``Read`` (``file_path``) and ``NotebookRead`` (``notebook_path``): reads;
  ``Edit``, ``Write``, ``MultiEdit`` (``file_path``) and ``NotebookEdit``
  (``notebook_path``): writes.
- ``Glob``/``Grep``: a read where they name one file — a ``path`` whose last
  segment has a file extension (``src/app.py``, not ``src``), or a Glob
  ``pattern`` without wildcards. A directory searched is no file touched.
- Codex ``apply_patch`` (the patch as the call's input, or a shell call running
  ``apply_patch``): a write per ``*** Add File:``, ``*** Update File:``,
  ``*** Delete File:`` and ``*** Move to:`` header.

Paths are made absolute against the row's ``cwd`` and normalised (``a/./b/..``
→ ``a``); Windows paths (``C:\\…``) keep Windows rules. A relative path in a
row without a ``cwd`` stays relative.
"""

from __future__ import annotations

import json
import ntpath
import posixpath
import re
import unicodedata
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.text import is_text

TOUCHED_FILES = "touched_files"
# The columns computing it reads.
NEEDS = ("tool_name", "tool_args", "cwd", "part_type")

READS: dict[str, tuple[str, ...]] = {"Read": ("file_path",),
                                     "NotebookRead": ("notebook_path", "file_path")}
WRITES: dict[str, tuple[str, ...]] = {
    "Edit": ("file_path",), "Write": ("file_path",), "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path", "file_path"),
}
SEARCHES = frozenset({"Glob", "Grep"})
PATCHES = frozenset({"apply_patch"})
SHELLS = frozenset({"shell", "exec_command", "local_shell", "container.exec", "shell_command"})

_quote = json.encoder.encode_basestring
_FILE_TOOLS = pa.array(sorted({*READS, *WRITES, *SEARCHES, *PATCHES}))
_SHELL_TOOLS = pa.array(sorted(SHELLS))
_CLAUDE_TOOLS = pa.array(sorted({*READS, *WRITES, *SEARCHES}))
_HEADER = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$",
                     re.MULTILINE)
# A shell script's words and control operators, as far as finding its cds needs:
# quoted words, ``&&``/``||``/``;``/``|``/``&``/newline/parentheses, bare words.
_SHELL_TOKEN = re.compile(r"""'[^']*'|"(?:[^"\\]|\\.)*"|&&|\|\||[;|&()\n]|[^\s;&|()'"]+|['"]""")
# Scripts longer than this before their apply_patch are not followed (the call's folder
# stands): no one types one, and each cd's folder is a longer copy of the last.
_LONGEST_SCRIPT = 100_000
# A line opening a here-document, and its delimiter word.
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
# A lone quote opens a script quoted whole (``bash -lc 'cd web && apply_patch …``, the
# command as one string): what follows it is that script's first command.
_SEPARATORS = frozenset({"&&", "||", ";", "\n", "&", "|", "(", ")", "'", '"'})
_WILDCARD = re.compile(r"[*?\[\]{}]")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]|^\\\\")
# Public for `files --path`: a Windows path (drive or UNC) is matched by either slash.
DRIVE = _DRIVE


def normalise(path: str, cwd: str | None) -> str:
    """``path`` made absolute against ``cwd`` and normalised.

    >>> normalise("src/./a/../b.py", "/home/dev/app")
    '/home/dev/app/src/b.py'
    >>> normalise("/etc/hosts", "/home/dev")
    '/etc/hosts'
    >>> normalise("src\\\\main.rs", "C:\\\\work\\\\app")
    'C:\\\\work\\\\app\\\\src\\\\main.rs'
    >>> normalise("b.py", None)
    'b.py'
    >>> normalise("//w/a.py", None), normalise("c:\\\\w\\\\a.py", None)
    ('/w/a.py', 'C:\\\\w\\\\a.py')
    """
    windows = bool(_DRIVE.match(path) or (cwd and _DRIVE.match(cwd)))
    mod: Any = ntpath if windows else posixpath
    if cwd and not mod.isabs(path):
        path = mod.join(cwd, path)
    path = str(mod.normpath(path))
    # One spelling per file: normpath keeps POSIX's two leading slashes (``//w/a`` is
    # ``/w/a`` on Linux and macOS), a drive letter's case (``c:`` is ``C:``), and
    # Unicode as written (macOS hands out NFD names, models type NFC).
    if windows:
        if path[1:2] == ":":
            path = path[0].upper() + path[1:]
    elif path.startswith("//"):
        path = "/" + path.lstrip("/")
    return path if path.isascii() else unicodedata.normalize("NFC", path)


def _args(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        # A custom tool's input is plain text (a Codex patch); a document nested
        # deeper than Python's json goes is taken as text too.
        return raw


def _names_file(path: str) -> bool:
    last = re.split(r"[\\/]", path.rstrip("\\/"))[-1]
    stem, dot, ext = last.rpartition(".")
    return bool(dot and stem and ext and not _WILDCARD.search(last))


def _patch_text(name: str, args: Any) -> str | None:
    if isinstance(args, str):
        return args if name in PATCHES else None
    if not isinstance(args, dict):
        return None
    if name in PATCHES:
        text = args.get("input") or args.get("patch")
        return text if isinstance(text, str) else None
    command = args.get("command") or args.get("cmd")
    if isinstance(command, list) and command and command[0] in ("apply_patch", "applypatch"):
        return next((c for c in command[1:] if isinstance(c, str)), None)
    if isinstance(command, list) and len(command) == 3 and "apply_patch" in str(command[2]):
        return str(command[2])  # bash -lc "apply_patch <<'EOF' ... EOF"
    if isinstance(command, str) and "apply_patch" in command:
        return command
    return None


def found_paths(tool_name: str, args: Any) -> list[tuple[str, str]]:
    """``(op, path)`` as a tool call's (parsed) arguments name them, not yet normalised.

    >>> found_paths("Glob", {"path": "src", "pattern": "a.py"})
    [('read', 'src/a.py')]
    """
    found: list[tuple[str, str]] = []
    if isinstance(args, dict):
        for op, table in (("read", READS), ("write", WRITES)):
            for key in table.get(tool_name, ()):
                value = args.get(key)
                if isinstance(value, str) and value:
                    found.append((op, value))
                    break
        if tool_name in SEARCHES:
            path, pattern = args.get("path"), args.get("pattern")
            if isinstance(path, str) and _names_file(path):
                found.append(("read", path))
            elif tool_name == "Glob" and isinstance(pattern, str) and _names_file(pattern):
                found.append(("read", posixpath.join(path, pattern)
                              if isinstance(path, str) and path else pattern))
    if tool_name in PATCHES or tool_name in SHELLS:
        text = _patch_text(tool_name, args)
        if text:
            where = _patch_dir(args, text)
            found += [("write", _under(where, m.group(1))) for m in _HEADER.finditer(text)]
    return found


def _patch_dir(args: Any, text: str) -> str | None:
    """The folder a Codex patch's relative paths are under, when not the session's cwd:
    the call's ``workdir`` (itself relative to the cwd when relative), then a ``cd DIR
    &&`` before ``apply_patch`` in a shell script; Codex resolves them so."""
    # ``working_directory``: a ``local_shell_call``'s exec action names its folder so.
    workdir = (args.get("workdir") or args.get("working_directory")) if isinstance(
        args, dict) else None
    where = workdir if isinstance(workdir, str) and workdir else None
    at = text.find("apply_patch")
    moved = _script_dir(text[:at]) if at > 0 else None
    return _under(where, moved) if moved else where


def _script_dir(script: str) -> str | None:
    """Where a shell is after running ``script`` (the part of a Codex shell call before
    its ``apply_patch``), relative to where it started; None when it did not move or
    went where the text does not say (``cd`` alone, ``cd -``, ``cd ~``).

    Follows ``cd``/``pushd``/``popd`` in order (``cd a && cd b`` is ``a/b``), on their
    own line or after ``;``, ``&&`` or ``||``; a ``( … )`` subshell's or a pipeline's
    cd ends with it, as the shell's does. Only a cd in command position counts
    (``echo cd x`` is none).

    >>> _script_dir("set -e\\npushd web >/dev/null && cd src || exit 1; ")
    'web/src'
    >>> _script_dir("(cd web && make); ") is None
    True
    """
    if len(script) > _LONGEST_SCRIPT:
        return None
    frames: list[str | None] = [None]   # the folder of each open subshell, innermost last
    pushed: list[str | None] = []
    words: list[str] = []
    tokens = [*_SHELL_TOKEN.findall(_without_heredocs(script)), "\n"]
    for i, token in enumerate(tokens):
        if token not in _SEPARATORS:
            words.append(token)
            continue
        piped = token == "|" or (i > len(words) and tokens[i - len(words) - 1] == "|")
        if words and words[0] in ("cd", "pushd", "popd") and not piped:
            if words[0] == "popd":
                if pushed:
                    frames[-1] = pushed.pop()
            else:
                target = next((w.strip("'\"") for w in words[1:]
                               if w == "-" or not w.startswith("-")), None)
                if target is None or target == "-" or target.startswith(("~", "$")):
                    return None
                if words[0] == "pushd":
                    pushed.append(frames[-1])
                frames[-1] = _under(frames[-1], target)
        words = []
        if token == "(":
            frames.append(frames[-1])
        elif token == ")" and len(frames) > 1:
            frames.pop()
    return frames[-1]


def _without_heredocs(script: str) -> str:
    """``script`` without its here-documents' bodies (text, not commands: a ``cd`` in
    one moves nothing), in one pass over its lines.

    >>> _without_heredocs("cat > a <<'X'\\ncd web\\nX\\ncd src")
    "cat > a <<'X'\\ncd src"
    """
    if "<<" not in script:
        return script
    kept: list[str] = []
    until: str | None = None
    for line in script.split("\n"):
        if until is not None:
            if line.strip() == until:
                until = None
            continue
        kept.append(line)
        found = _HEREDOC.search(line)
        until = found.group(2) if found else None
    return "\n".join(kept)


def _under(folder: str | None, path: str) -> str:
    """``path`` joined to ``folder`` (an absolute path, or no folder, leaves it as is)."""
    if not folder:
        return path
    windows = bool(_DRIVE.match(path) or _DRIVE.match(folder))
    mod: Any = ntpath if windows else posixpath
    return path if mod.isabs(path) else mod.join(folder, path)


def touched(tool_name: str | None, tool_args: str | None,
            cwd: str | None) -> list[tuple[str, str]]:
    """``(op, path)`` for each file a tool call reads (``read``) or writes (``write``).

    >>> touched("Edit", '{"file_path": "src/a.py", "old_string": "x"}', "/w")
    [('write', '/w/src/a.py')]
    >>> touched("Grep", '{"path": "src", "pattern": "x"}', "/w")
    []
    >>> touched("apply_patch", "*** Begin Patch\\n*** Update File: a.py\\n*** End Patch", "/w")
    [('write', '/w/a.py')]
    """
    if not tool_name:
        return []
    # Once per (op, file) a call: a patch naming one file in two headers (``a.py`` and
    # ``/w/a.py``) is one call that wrote it, and reads/writes count calls.
    return list(dict.fromkeys(
        (op, normalise(p, cwd)) for op, p in found_paths(tool_name, _args(tool_args))))


def touched_json(tool_name: str | None, tool_args: str | None, cwd: str | None) -> str | None:
    """The ``touched_files`` text of one row (null when it touches no file).

    >>> touched_json("Read", '{"file_path": "/a/b.py"}', None)
    '[{"path": "/a/b.py", "reads": 1, "writes": 0}]'
    """
    items = touched(tool_name, tool_args, cwd)
    if not items:
        return None
    # Built by hand: json.dumps of the list costs more than finding the paths did.
    return "[" + ", ".join(
        f'{{"path": {_json_text(p)}, "reads": {int(op == "read")}, '
        f'"writes": {int(op == "write")}}}' for op, p in items) + "]"


def _json_text(path: str) -> str:
    """``path`` as a JSON string; a lone surrogate (JSON's ``\\ud800`` parses to one, and
    UTF-8 cannot hold it) stays escaped."""
    text = _quote(path)
    return text if text.isascii() or is_text(text) else json.dumps(path)


def _text(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if pa.types.is_struct(arr.type) or pa.types.is_list(arr.type):
        return pa.array([None if v is None else json.dumps(v) for v in arr.to_pylist()],
                        pa.string())
    return arr.cast(pa.string())


# The argument keys Claude's file tools name files by, read by Arrow's JSON reader.
_KEYS = pa.schema([(k, pa.string()) for k in ("file_path", "notebook_path", "path", "pattern")])
# A document Arrow's reader takes exactly as json.loads does, one per line: an object
# alone on its line (json.loads refuses a BOM, Arrow would take it; a newline would
# split it; several objects on a line are caught by the row count).
_ONE_LINE_OBJECT = r"^[ \t]*\{[^\n\r]*\}[ \t]*$"
# json.loads gives up on documents nested about 1,000 deep (taken as text: no path),
# where Arrow's reader would still find the keys: documents with this many brackets
# (inside strings too, so some that are not deep) go row by row, to answer alike.
_MAX_BRACKETS = 500
# A posix path normpath and join leave as they are (no ``.``/``..`` segment, no ``//``,
# no trailing ``/``); any other goes through normalise().
_NEEDS_NORMPATH = r"(^|/)\.\.?(/|$)|//|./$"
# Text json's encode_basestring changes (quote, backslash, control characters).
_NEEDS_QUOTING = r'["\\\x00-\x1f]'


def _file_tool_rows(table: pa.Table, names: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(positions of the rows calling a file tool, of the shell rows among them)."""
    calls = pc.is_in(names, value_set=_FILE_TOOLS)
    shells = pc.fill_null(pc.is_in(names, value_set=_SHELL_TOOLS), False)
    if "part_type" in table.column_names:
        not_result = pc.fill_null(pc.not_equal(
            _text(table.column("part_type")), "tool_result"), True)
        calls = pc.and_kleene(calls, not_result)
        shells = pc.and_(shells, not_result)
    shell_at = pc.indices_nonzero(shells)
    if len(shell_at):
        # A shell call counts only when its arguments mention apply_patch.
        text = _text(pc.take(table.column("tool_args"), shell_at))
        shell_at = shell_at.filter(pc.fill_null(pc.match_substring(text, "apply_patch"), False))
    return pc.indices_nonzero(pc.fill_null(calls, False)), shell_at


def _read_keys(docs: pa.Array) -> pa.Table | None:
    """The :data:`_KEYS` of each document by Arrow's JSON reader (None where it refuses
    one of them: a key of another type, twice, invalid JSON)."""
    empty, newline = pa.scalar("", pa.large_string()), pa.scalar("\n", pa.large_string())
    joined = pc.binary_join_element_wise(docs.cast(pa.large_string()), empty, newline)
    offsets = joined.buffers()[1]
    import numpy as np

    ends = np.frombuffer(offsets, dtype=np.int64, count=len(joined) + 1, offset=joined.offset * 8)
    data = joined.buffers()[2][int(ends[0]):int(ends[-1])]
    longest = int(np.max(np.diff(ends))) if len(docs) else 0
    import pyarrow.json as pajson

    try:
        got = pajson.read_json(pa.BufferReader(data), read_options=pajson.ReadOptions(
            block_size=max(1 << 22, longest + 2)), parse_options=pajson.ParseOptions(
            explicit_schema=_KEYS, unexpected_field_behavior="ignore"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return got if got.num_rows == len(docs) else None


# Documents per retry where Arrow's reader refuses the whole set (tests set it to 1).
CHUNK = 4096


def _keys_by_chunk(docs: pa.Array) -> tuple[pa.Table, pa.Array]:
    """:func:`_read_keys` of ``docs``, a chunk at a time where the whole is refused;
    and which documents it read (False: chunks to parse with json.loads)."""
    if not len(docs):
        return _KEYS.empty_table(), pa.array([], pa.bool_())
    whole = _read_keys(docs)
    if whole is not None:
        return whole.combine_chunks(), pc.is_valid(docs)
    parts, ok = [], []
    for at in range(0, len(docs), CHUNK):
        part = docs.slice(at, CHUNK)
        got = _read_keys(part)
        ok += [got is not None] * len(part)
        parts.append(got if got is not None else pa.table(
            {k.name: pa.nulls(len(part), pa.string()) for k in _KEYS}))
    return pa.concat_tables(parts).combine_chunks(), pa.array(ok)


def _quick(names: pa.Array, docs: pa.Array) -> pa.Array:
    """Which Claude file-tool calls' documents Arrow's JSON reader may parse."""
    claude = pc.is_in(names, value_set=_CLAUDE_TOOLS)
    shallow = pc.less(pc.count_substring_regex(docs, r"[\[{]"), _MAX_BRACKETS)
    return pc.fill_null(pc.and_(pc.and_(claude, shallow),
                                pc.match_substring_regex(docs, _ONE_LINE_OBJECT)), False)


def _headerless_patches(names: pa.Array, docs: pa.Array) -> pa.Array:
    """Which patch or shell calls surely name no file: the only files they name are in
    ``*** ... File:`` headers (:data:`_HEADER`), and their text holds no ``***``, nor a
    ``\\u`` escape that could spell one in JSON."""
    import numpy as np

    patch = pc.is_in(names, value_set=pa.array(sorted({*PATCHES, *SHELLS})))
    # Only the patch and shell calls' text is searched: the others (a Write holds a
    # whole file) are most of the bytes and never headerless patches.
    at = pc.indices_nonzero(pc.fill_null(patch, False))
    texts = pc.take(docs, at)
    marked = pc.or_(pc.match_substring(texts, "***"), pc.match_substring(texts, "\\u"))
    out = np.zeros(len(names), dtype=bool)
    out[at.to_numpy()] = pc.fill_null(pc.invert(marked), False).to_numpy(zero_copy_only=False)
    return pa.array(out)


def _paths_by_arrow(names: pa.Array, docs: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(op, raw path, parsed?) per Claude call, the keys read by Arrow; the same
    choice of key and path as :func:`found_paths`, taken from the keys alone."""
    keys, ok = _keys_by_chunk(docs)

    def given(name: str) -> pa.Array:
        col = keys.column(name).combine_chunks()
        return pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.string()), col)

    file_path = given("file_path")
    notebook = pc.coalesce(given("notebook_path"), file_path)
    raw = pc.if_else(pc.is_in(names, value_set=pa.array(["NotebookRead", "NotebookEdit"])),
                     notebook, file_path)
    # Glob and Grep read, as READS do; WRITES write.
    op = pc.if_else(pc.is_in(names, value_set=pa.array(sorted(WRITES))), "write", "read")
    # Glob/Grep: a path naming a file, else (Glob) a pattern naming one, joined to the path.
    path, pattern = keys.column("path").combine_chunks(), keys.column("pattern").combine_chunks()
    path_file = _names_files(path)
    # Only a Glob whose path names no file reads its pattern (Grep's are regexes: skip them).
    pattern = pc.if_else(pc.and_(pc.equal(names, "Glob"), pc.invert(path_file)), pattern,
                         pa.scalar(None, pa.string()))
    joined = pc.if_else(pc.or_kleene(pc.starts_with(pattern, "/"), pc.ends_with(path, "/")),
                        pc.binary_join_element_wise(path, pattern, ""),
                        pc.binary_join_element_wise(path, pattern, "/"))
    glob = pc.if_else(pc.fill_null(pc.starts_with(pattern, "/"), False), pattern, joined)
    glob = pc.if_else(pc.fill_null(pc.equal(path, ""), True), pattern, glob)
    glob = pc.if_else(_names_files(pattern), glob, pa.scalar(None, pa.string()))
    searched = pc.if_else(path_file, path, pc.if_else(pc.equal(names, "Glob"), glob,
                                                      pa.scalar(None, pa.string())))
    raw = pc.if_else(pc.is_in(names, value_set=pa.array(sorted(SEARCHES))), searched, raw)
    return op, raw, ok


def _names_files(paths: pa.Array) -> pa.Array:
    """:func:`_names_file` of each path (False for null)."""
    last = pc.struct_field(pc.extract_regex(pc.utf8_rtrim(paths, characters="\\/"),
                                            r"(?s)(?P<last>[^\\/]*)$"), [0])
    named = pc.and_(pc.match_substring_regex(last, r"(?s)^.+\.[^.]+$"),
                    pc.invert(pc.match_substring_regex(last, _WILDCARD.pattern)))
    return pc.fill_null(named, False)


def _put(arr: pa.Array, at: pa.Array | list[int],
         values: pa.Array | list[Any]) -> pa.Array:
    """``arr`` with ``values`` at positions ``at``."""
    import numpy as np

    where = np.asarray(at.to_numpy() if isinstance(at, pa.Array) else at, dtype=np.int64)
    pos = np.arange(len(arr), dtype=np.int64)
    pos[where] = len(arr) + np.arange(len(where), dtype=np.int64)
    extra = values if isinstance(values, pa.Array) else pa.array(values, arr.type)
    return pc.take(pa.concat_arrays([arr, extra.cast(arr.type)]), pa.array(pos))


def _normalised(paths: pa.Array, cwds: pa.Array) -> pa.Array:
    """normalise() of each path against its cwd: by Arrow where the path is posix and
    joining and normpath change nothing but the join, by normalise() elsewhere."""
    cwd = pc.if_else(pc.equal(cwds, ""), pa.scalar(None, pa.string()), cwds)
    slash = pc.if_else(pc.ends_with(cwd, "/"), "", "/")
    joined = pc.if_else(pc.or_kleene(pc.starts_with(paths, "/"), pc.is_null(cwd)), paths,
                        pc.binary_join_element_wise(cwd, slash, paths, ""))
    odd = pc.or_kleene(pc.or_kleene(
        pc.match_substring_regex(paths, _DRIVE.pattern),
        pc.fill_null(pc.match_substring_regex(cwd, _DRIVE.pattern), False)),
        pc.match_substring_regex(joined, _NEEDS_NORMPATH))
    # Paths of other characters than ASCII go through normalise() too (NFC).
    odd = pc.or_kleene(odd, pc.invert(pc.string_is_ascii(joined)))
    at = pc.indices_nonzero(pc.fill_null(odd, False)).to_pylist()
    if not at:
        return joined
    sel = pa.array(at, pa.int64())
    return _put(joined, at, [normalise(p, c) for p, c in zip(
        pc.take(paths, sel).to_pylist(), pc.take(cwds, sel).to_pylist(), strict=True)])


def _one_file_json(ops: pa.Array, paths: pa.Array) -> pa.Array:
    """``touched_json`` text of one file per row, built by Arrow (json's quoting by
    Python where a path needs escapes)."""
    odd = pc.match_substring_regex(paths, _NEEDS_QUOTING)
    at = pc.indices_nonzero(odd).to_pylist()
    quoted = pc.binary_join_element_wise('"', paths, '"', "")
    if at:
        quoted = _put(quoted, at, [_quote(p) for p in pc.take(paths, pa.array(
            at, pa.int64())).to_pylist()])
    tail = pc.if_else(pc.equal(ops, "read"), ', "reads": 1, "writes": 0}]',
                      ', "reads": 0, "writes": 1}]')
    return pc.binary_join_element_wise('[{"path": ', quoted, tail, "")


def with_touched_files(table: pa.Table, keep_args: bool) -> pa.Table:
    """``table`` with a ``touched_files`` column (kept if the source has one),
    computed on tool calls only; ``tool_args`` is dropped unless ``keep_args``.

    Claude's file tools (most calls) are read by Arrow: their argument keys by its
    JSON reader, paths joined and quoted by compute functions; patches, shell calls
    and any document Arrow might read otherwise than json.loads go through
    :func:`touched_json` one by one, giving the same text."""
    if TOUCHED_FILES not in table.column_names:
        n = table.num_rows
        have = set(table.column_names)
        column = pa.nulls(n, pa.string())
        if {"tool_name", "tool_args"} <= have and n:
            column = _touched_column(table, n)
        table = table.append_column(TOUCHED_FILES, column)
    if not keep_args and "tool_args" in table.column_names:
        table = table.drop_columns(["tool_args"])
    return table


def _touched_column(table: pa.Table, n: int) -> pa.Array:
    names = _text(table.column("tool_name"))
    calls, shells = _file_tool_rows(table, names)
    at = pa.concat_arrays([calls, shells]).cast(pa.int64())
    if not len(at):
        return pa.nulls(n, pa.string())
    at = pc.take(at, pc.sort_indices(at))
    call_names = pc.take(names, at)
    docs = _text(pc.take(table.column("tool_args"), at))
    cwds = (_text(pc.take(table.column("cwd"), at)) if "cwd" in table.column_names
            else pa.nulls(len(at), pa.string()))
    quick = _quick(call_names, docs)
    q_at = pc.indices_nonzero(quick)
    ops, raw, ok = _paths_by_arrow(pc.take(call_names, q_at), pc.take(docs, q_at))
    # Calls Arrow did not read, and those it did not parse, go the Python way;
    # except patch and shell calls that hold no header: no file, no parse.
    slow = pc.and_(pc.invert(quick), pc.invert(_headerless_patches(call_names, docs)))
    if not pc.all(ok).as_py():
        slow = _put(slow, q_at, pc.invert(ok))
    values = pa.nulls(len(at), pa.string())
    hit = pc.and_(ok, pc.is_valid(raw))
    if pc.any(hit).as_py():
        h_at = pc.take(q_at, pc.indices_nonzero(hit))
        text = _one_file_json(ops.filter(hit), _normalised(raw.filter(hit),
                                                           pc.take(cwds, h_at)))
        values = _put(values, h_at, text)
    s_at = pc.indices_nonzero(slow)
    if len(s_at):
        values = _put(values, s_at.to_pylist(), [
            touched_json(a, b, c) for a, b, c in zip(
                pc.take(call_names, s_at).to_pylist(), pc.take(docs, s_at).to_pylist(),
                pc.take(cwds, s_at).to_pylist(), strict=True)])
    return _put(pa.nulls(n, pa.string()), at, values)
