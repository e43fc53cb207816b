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
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

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
_HEADER = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$",
                     re.MULTILINE)
_WILDCARD = re.compile(r"[*?\[\]{}]")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]|^\\\\")


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
    """
    windows = bool(_DRIVE.match(path) or (cwd and _DRIVE.match(cwd)))
    mod: Any = ntpath if windows else posixpath
    if cwd and not mod.isabs(path):
        path = mod.join(cwd, path)
    return str(mod.normpath(path))


def _args(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # a custom tool's input is plain text (a Codex patch)


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
    args = _args(tool_args)
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
            found += [("write", m.group(1)) for m in _HEADER.finditer(text)]
    return [(op, normalise(p, cwd)) for op, p in found]


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
        f'{{"path": {_quote(p)}, "reads": {int(op == "read")}, "writes": {int(op == "write")}}}'
        for op, p in items) + "]"


def _text(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if pa.types.is_struct(arr.type) or pa.types.is_list(arr.type):
        return pa.array([None if v is None else json.dumps(v) for v in arr.to_pylist()],
                        pa.string())
    return arr.cast(pa.string())


def with_touched_files(table: pa.Table, keep_args: bool) -> pa.Table:
    """``table`` with a ``touched_files`` column (kept if the source has one),
    computed on tool calls only; ``tool_args`` is dropped unless ``keep_args``."""
    if TOUCHED_FILES not in table.column_names:
        n = table.num_rows
        have = set(table.column_names)
        values: list[str | None] = [None] * n
        if {"tool_name", "tool_args"} <= have and n:
            # Only calls of the tools above can name a file: JSON is parsed for them
            # alone (a shell call only when its arguments mention apply_patch).
            names = _text(table.column("tool_name"))
            args = _text(table.column("tool_args"))
            calls = pc.or_kleene(pc.is_in(names, value_set=_FILE_TOOLS), pc.and_kleene(
                pc.is_in(names, value_set=_SHELL_TOOLS),
                pc.match_substring(args, "apply_patch")))
            if "part_type" in have:
                calls = pc.and_kleene(calls, pc.fill_null(pc.not_equal(
                    _text(table.column("part_type")), "tool_result"), True))
            at = pc.indices_nonzero(pc.fill_null(calls, False)).to_pylist()
            if at:
                sel = pa.array(at)
                cwds = (pc.take(_text(table.column("cwd")), sel).to_pylist()
                        if "cwd" in have else [None] * len(at))
                for i, name, a, cwd in zip(at, pc.take(names, sel).to_pylist(),
                                           pc.take(args, sel).to_pylist(), cwds, strict=True):
                    values[i] = touched_json(name, a, cwd)
        table = table.append_column(TOUCHED_FILES, pa.array(values, pa.string()))
    if not keep_args and "tool_args" in table.column_names:
        table = table.drop_columns(["tool_args"])
    return table
