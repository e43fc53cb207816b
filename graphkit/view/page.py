"""One session's page from a store, in one call: its data (:mod:`.data`) drawn as HTML
(:mod:`.html`), the store it came from named on the page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphkit.enrich.base import LineageReader
from graphkit.enrich.open import describe_store
from graphkit.queries.prices import load_prices
from graphkit.queries.usage import session_usage
from graphkit.view.data import session_view
from graphkit.view.history import thread_costs
from graphkit.view.html import render_html


@dataclass(frozen=True)
class SessionPage:
    """A session's page, as :func:`session_page` returns it: ``html`` (one
    self-contained file: write it with :func:`graphkit.write_html`), ``data`` (what is
    drawn in it, as JSON-able dicts) and ``threads`` (how many threads it shows).

    >>> SessionPage("<!doctype html>", {"threads": [{}, {}]}).threads
    2
    """

    html: str
    data: dict[str, Any]

    @property
    def threads(self) -> int:
        """How many threads the page shows."""
        return len(self.data["threads"])


def session_page(store: LineageReader, session_id: str, *,
                 include_content: bool = False) -> SessionPage:
    """Return one session as a self-contained, offline HTML page: its threads and
    subagents as a collapsible tree beside a timeline.

    Parameters
    ----------
    store : LineageReader
        The graph.
    session_id : str
        The session to draw.
    include_content : bool
        Show message text (from a snapshot built with ``--granularity message
        --include-content``); without it no message text reaches the page.

    Returns
    -------
    SessionPage
        Write its ``html`` with :func:`graphkit.view.html.write_html`.

    Raises
    ------
    QueryError
        ``session_id`` names no session.

    Examples
    --------
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> page = session_page(store, "sess-1")
    >>> page.threads, page.html.startswith("<!doctype html>")
    (3, True)
    """
    costs = None
    if any(h.type == store.vocabulary.session for h in store.resolve(session_id)):
        # Each thread's cost and its subtree's, as `graphkit usage` sums them (a thread
        # id is drawn too, without costs; session_view says what it names).
        (usage,) = session_usage(store, [session_id])
        costs = thread_costs(usage, load_prices())
    data = session_view(store, session_id, include_content=include_content,
                        source=describe_store(store), costs=costs)
    return SessionPage(render_html(data), data)
