"""Codex's state database: ``~/.codex/state_<n>.sqlite`` (0.14x+; the number changes with
Codex's schema, so it is found by a glob).

Two of its tables say what rollouts may not: ``thread_spawn_edges (parent_thread_id,
child_thread_id PRIMARY KEY, status)`` names a spawned thread's parent where the parent's
rollout is absent or archived, and ``threads`` (``id``, ``agent_nickname``,
``agent_role``, ``name``, ``title``, ...) names threads. The database is Codex's own,
written while it runs: it is opened with SQLite's read-only URI (``mode=ro``), for a
moment, and any failure to read it is a note, never an error. Table shapes as public
readers of the file create them in their tests (e.g. a Python session viewer's
``CODEX_SCHEMA``, a Codex agent-pool hook's notes on ``thread_spawn_edges``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

_ROOTS = ("sessions", "archived_sessions")
_NAMES = ("agent_nickname", "agent_role", "name", "title")


@dataclass
class CodexState:
    """What the state databases say: child thread → parent thread, thread → names."""

    parents: dict[str, str] = field(default_factory=dict)
    names: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)


def state_databases(given: Iterable[Path], rollouts: Iterable[Path]) -> list[Path]:
    """The ``state_*.sqlite`` files of the Codex homes the sources lie in: beside a
    ``sessions`` or ``archived_sessions`` folder holding a rollout, or in a folder given
    as a source; newest schema number first."""
    homes: set[Path] = set()
    for path in given:
        if path.is_dir():
            homes.add(path)
            if path.name in _ROOTS:
                homes.add(path.parent)
    for rollout in rollouts:
        for folder in rollout.parents:
            if folder.name in _ROOTS:
                homes.add(folder.parent)
                break
    found = {db for home in homes for db in home.glob("state_*.sqlite") if db.is_file()}
    return sorted(found, key=lambda p: (_number(p), str(p)), reverse=True)


def _number(path: Path) -> int:
    tail = path.stem.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def read_state(databases: list[Path]) -> CodexState:
    """Spawn edges and names of every database (the first to name a thread wins)."""
    state = CodexState()
    for db in databases:
        try:
            _read_one(db, state)
            state.read.append(str(db))
        except sqlite3.Error as exc:
            state.notes.append(f"{db}: Codex state database not read ({exc}); spawn links "
                               "it holds are missing")
    return state


def _read_one(db: Path, state: CodexState) -> None:
    uri = f"file:{quote(str(db))}?mode=ro"
    with sqlite3.connect(uri, uri=True, timeout=1.0) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "thread_spawn_edges" in tables:
            for parent, child in con.execute(
                    "SELECT parent_thread_id, child_thread_id FROM thread_spawn_edges"):
                if isinstance(parent, str) and isinstance(child, str) and parent and child \
                        and parent != child:
                    state.parents.setdefault(child, parent)
        if "threads" in tables:
            have = {r[1] for r in con.execute("PRAGMA table_info(threads)")}
            cols = [c for c in _NAMES if c in have]
            if "id" in have and cols:
                query = f"SELECT id, {', '.join(cols)} FROM threads"  # names from the schema
                for row in con.execute(query):
                    names = {c: v for c, v in zip(cols, row[1:], strict=True)
                             if isinstance(v, str) and v.strip()}
                    if isinstance(row[0], str) and names:
                        state.names.setdefault(row[0], names)
    con.close()
