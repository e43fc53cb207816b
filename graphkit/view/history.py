"""The history page: an offline site of every session (``graphkit view --out DIR``).

``index.html`` lists every session (start, workspace, threads, subagents, tokens,
cost), sortable by any column and filtered by workspace and time on the page itself;
each row links to ``sessions/<name>.html``, the session's own page
(:func:`graphkit.view.data.session_view`) with each thread's cost and its subtree's.
Like the session page, every page is one self-contained file that loads nothing.

>>> import tempfile
>>> from pathlib import Path
>>> from graphkit.builds.run import example_graph
>>> from graphkit.snapshot import write_snapshot
>>> from graphkit.enrich.snapshot_store import SnapshotReader
>>> d = Path(tempfile.mkdtemp())
>>> _ = write_snapshot(example_graph(), d / "snap")
>>> site = write_site(SnapshotReader(d / "snap"), d / "site")
>>> site.sessions, sorted(p.name for p in (d / "site").iterdir())
(2, ['graphkit-export.json', 'index.html', 'sessions'])
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from graphkit._version import __version__
from graphkit.enrich.base import LineageReader
from graphkit.queries.lineage import sessions as list_sessions
from graphkit.queries.prices import (
    Cost,
    PriceTable,
    load_prices,
    session_cost,
    subtree_costs,
    thread_cost,
)
from graphkit.queries.usage import SessionUsage, Tokens, session_usage
from graphkit.snapshot.read import read_manifest
from graphkit.view.data import VIEW_FORMAT, session_view
from graphkit.view.html import page_html, render_html

INDEX = "index.html"
SESSIONS = "sessions"
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass
class SiteReport:
    """What :func:`write_site` wrote: the site's folder ``out``, and how many
    ``sessions`` and ``threads`` its pages show.

    >>> SiteReport(Path("out/site"), sessions=14, threads=64).sessions
    14
    """

    out: Path
    sessions: int
    threads: int


def thread_costs(u: SessionUsage, table: PriceTable) -> dict[str, tuple[float | None,
                                                                         float | None]]:
    """Each thread's own cost and its subtree's in USD, by thread node id; None where a
    model in it has no price (unknown, never zero): the sums ``graphkit usage`` makes."""
    own = [thread_cost(t, table) for t in u.threads]
    tree = subtree_costs(u, table, own)
    return {t.node_id: (o.known, s.known) for t, o, s in zip(u.threads, own, tree, strict=True)}


def page_name(session_id: str, taken: set[str]) -> str:
    """The file name of a session's page: its id where that is a plain, short file name
    (no other session's differs from it only in case), else a digest of it.

    >>> taken = set()
    >>> page_name("8299ed6e-811c", taken), page_name("a/../b", taken)[:2]
    ('8299ed6e-811c.html', 's-')
    """
    plain = _SAFE.fullmatch(session_id) is not None and session_id.lower() not in taken
    stem = session_id if plain else "s-" + hashlib.sha256(
        session_id.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    taken.add(stem.lower())
    return stem + ".html"


def _workspaces(reader: LineageReader) -> dict[str, str]:
    """Each session's workspace (repo root, else cwd) by session id, where the snapshot
    has them (the default contract's Workspace nodes and IN_WORKSPACE edges)."""
    directory = getattr(reader, "directory", None)
    if directory is None:
        return {}
    m = read_manifest(directory)
    v = reader.vocabulary
    edge, space, session = (m["edges"].get("IN_WORKSPACE"), m["nodes"].get("Workspace"),
                            m["nodes"].get(v.session))
    if not (edge and space and session):
        return {}
    names = dict(zip(*pq.read_table(directory / space["file"], columns=["id", "workspace"])
                     .to_pydict().values(), strict=True))
    sids = dict(zip(*pq.read_table(directory / session["file"], columns=["id", v.session_key])
                    .to_pydict().values(), strict=True))
    out: dict[str, str] = {}
    pairs = pq.read_table(directory / edge["file"], columns=["source", "target"]).to_pydict()
    for s, w in sorted(zip(pairs["source"], pairs["target"], strict=True)):
        if s in sids and w in names:
            out.setdefault(str(sids[s]), str(names[w]))
    return out


def history_view(reader: LineageReader, *, table: PriceTable | None = None,
                 source: str = "", names: dict[str, str] | None = None,
                 usages: list[SessionUsage] | None = None) -> dict[str, Any]:
    """The history page's data: one row per session, oldest first, each with its
    start and end, workspace, thread, subagent, message and token counts, cost, and
    the file of its page (``names``, by session id)."""
    table = table or load_prices()
    summaries = list_sessions(reader)
    if usages is None:
        usages = session_usage(reader, [s.session_id for s in summaries])
    usage = {u.session_id: u for u in usages}
    spaces = _workspaces(reader)
    rows = []
    for s in summaries:
        u = usage.get(s.session_id)
        total = u.total if u is not None else Tokens()
        cost = session_cost(u, table) if u is not None else Cost()
        rows.append({"id": s.session_id, "first_seen": s.first_seen, "last_seen": s.last_seen,
                     "workspace": spaces.get(s.session_id), "threads": s.threads,
                     "subagents": s.agents, "messages": s.messages, "tokens": total.total(),
                     **total.to_json(), "cost_usd": cost.known,
                     "priced_usd": round(cost.usd, 6), "unpriced_models": sorted(cost.unpriced),
                     "href": f"{SESSIONS}/{(names or {}).get(s.session_id, '')}"})
    return {"format": VIEW_FORMAT, "generated_by": f"graphkit {__version__}",
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "source": source, "prices": {"as_of": table.as_of, "source": table.source},
            "sessions": rows}


def write_site(reader: LineageReader, out: Path | str, *, include_content: bool = False,
               source: str = "", table: PriceTable | None = None,
               progress: Callable[[str], None] | None = None) -> SiteReport:
    """Write an offline website of every session in ``reader`` into the folder ``out``
    and return what it holds (``graphkit view --all``).

    ``out/index.html`` lists the sessions with their workspaces, threads, tokens and
    cost; ``out/sessions/`` holds one page per session (as :func:`graphkit.session_page`
    draws it). The site is written beside ``out`` and swapped into place whole.

    Parameters
    ----------
    reader : LineageReader
        The graph (a snapshot reader, the NetworkX or the Neo4j store).
    out : str or Path
        The site's folder: new, empty, or a site graphkit wrote (replaced).
    include_content : bool
        Show message text (from a snapshot built with ``--granularity message
        --include-content``); without it no message text reaches the pages.
    source : str
        Where the graph came from, named on the pages (e.g. ``snapshot out/graph``).
    table : PriceTable, optional
        The prices costs are counted with (default: the shipped table).
    progress : callable, optional
        Called with a line for each step.

    Returns
    -------
    SiteReport

    Raises
    ------
    ExportError
        ``out`` is a file, or a folder that is not a graphkit site (never
        overwritten), or cannot be written.

    Examples
    --------
    >>> import tempfile
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> site = Path(tempfile.mkdtemp()) / "site"
    >>> report = write_site(store, site)
    >>> report.sessions, report.threads, (site / "index.html").is_file()
    (2, 5, True)
    """
    from graphkit.export.registry import MARKER, ExportReport, FolderLayout, Output, write_marker

    say = progress or (lambda _m: None)
    table = table or load_prices()
    summaries = list_sessions(reader)
    taken: set[str] = set()
    names = {s.session_id: page_name(s.session_id, taken) for s in summaries}
    say(f"adding up usage of {len(summaries)} sessions")
    usages = session_usage(reader, [s.session_id for s in summaries])
    threads = 0
    layout = FolderLayout(frozenset({MARKER, INDEX, SESSIONS}), frozenset({SESSIONS}),
                          (".html",))
    with Output(Path(out)).folder("view", layout) as tmp:
        (tmp / SESSIONS).mkdir()
        for i, u in enumerate(usages, 1):
            if i % 200 == 0:
                say(f"writing session pages: {i} of {len(usages)}")
            data = session_view(reader, u.session_id, include_content=include_content,
                                source=source, costs=thread_costs(u, table),
                                index_href=f"../{INDEX}")
            threads += len(data["threads"])
            (tmp / SESSIONS / names[u.session_id]).write_text(render_html(data),
                                                              encoding="utf-8")
        index = history_view(reader, table=table, source=source, names=names, usages=usages)
        (tmp / INDEX).write_text(page_html("history", index, "graphkit history"),
                                 encoding="utf-8")
        write_marker(tmp, ExportReport("history-site", str(out),
                                       nodes={"sessions": len(usages), "threads": threads}),
                     {"index": INDEX})
    return SiteReport(Path(out), len(usages), threads)
