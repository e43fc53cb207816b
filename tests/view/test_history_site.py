"""``graphkit view --out DIR`` without a session id: the history as an offline site.
The site's data and files are checked here; what Chromium draws of it (every session
listed, every link resolving, 3,000 sessions drawn in time) in the slow tests below,
with the real headless browser of tests/helpers/browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from graphkit.builds.run import build, records_table
from graphkit.cli import cli
from graphkit.queries.tokens import TOKEN_FIELDS
from graphkit.snapshot import write_snapshot
from tests.helpers.browser import Browser, Dom
from tests.helpers.paths import REPO
from tests.helpers.rows import row, spawned

SOURCES = [REPO / "samples" / "rows", REPO / "tests/fixtures/transcripts/claude-code-log",
           REPO / "tests/fixtures/shaped"]


def invoke(*args: Any, code: int = 0) -> Any:
    res = CliRunner().invoke(cli, [str(a) for a in args])
    assert res.exit_code == code, res.output
    return res


def records(*args: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in invoke(*args, "--json").stdout.splitlines()]


def page_data(page: Path) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="graphkit-data">(.*?)</script>',
                      page.read_text(encoding="utf-8"), re.S)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("history") / "graph"
    invoke("-q", "build", *SOURCES, "--snapshot", out)
    return out


@pytest.fixture(scope="module")
def site(snapshot: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    res = invoke("view", "--snapshot", snapshot, "--out", out)
    sessions = json.loads((snapshot / "manifest.json").read_text())["counts"]["nodes"]["Session"]
    assert sessions >= 50 and f"{sessions} sessions" in res.stdout
    return out


@pytest.mark.slow
def test_the_index_lists_every_session_and_links_its_page(snapshot: Path, site: Path) -> None:
    index = page_data(site / "index.html")["sessions"]
    listed = records("sessions", "--snapshot", snapshot)
    assert [r["id"] for r in index] == [r["session_id"] for r in listed]
    for r, s in zip(index, listed, strict=True):
        assert (r["threads"], r["subagents"], r["first_seen"]) == \
            (s["threads"], s["agents"], s["first_seen"])
        page = site / r["href"]
        assert page.is_file() and page.parent == site / "sessions"
        data = page_data(page)
        assert data["session"]["id"] == r["id"] and data["index_href"] == "../index.html"
        assert len(data["threads"]) == r["threads"]
        assert all("cost_usd" in t and "subtree_cost_usd" in t for t in data["threads"])
    for r in sorted(index, key=lambda r: -r["threads"])[:8]:  # the pages draw the tree
        tree = [t["id"] for t in records("tree", r["id"], "--snapshot", snapshot)
                if t["type"] == "Thread"]
        assert [t["id"] for t in page_data(site / r["href"])["threads"]] == tree
    assert sum(1 for r in index if r["workspace"]) >= 45  # every session that names one


@pytest.mark.slow
def test_tokens_and_costs_are_usage_s(snapshot: Path, site: Path) -> None:
    index = {r["id"]: r for r in page_data(site / "index.html")["sessions"]}
    priced = 0
    for u in records("usage", "--snapshot", snapshot):
        r = index[u["session_id"]]
        # Tokens are the four counts; the billing details (1-hour cache writes, counted
        # among the cache writes, and web searches, which are requests) are not added.
        assert r["tokens"] == sum(u["total"][k] for k in TOKEN_FIELDS)
        groups = records("usage", u["session_id"], "--by", "model", "--snapshot", snapshot)
        unpriced = sorted({m for g in groups for m in g["unpriced_models"]})
        assert r["unpriced_models"] == unpriced
        if unpriced:
            assert r["cost_usd"] is None
            continue
        # Each figure is rounded to the micro-dollar: a sum of n rounded groups may be n
        # micro-dollars from the rounded total.
        rounding = 1e-6 * (len(groups) + 1)
        assert r["cost_usd"] == pytest.approx(sum(g["cost_usd"] for g in groups), abs=rounding)
        page = page_data(site / r["href"])
        roots = [t for t in page["threads"] if t["parent"] is None]
        # The roots' subtrees hold every thread: their costs add up to the session's.
        assert sum(t["subtree_cost_usd"] for t in roots) == pytest.approx(
            r["cost_usd"], abs=1e-6 * (len(roots) + 1))
        priced += r["cost_usd"] > 0
    assert priced >= 10


def test_ids_that_are_no_file_names_get_digest_names(tmp_path: Path) -> None:
    nasty = ["../../etc/passwd", "5e55-<i>x</i>", "ABC", "abc", "a" * 300]
    rows = [row(sid, message_id=f"m{i}") for i, sid in enumerate(nasty)]
    rows.append(row("ABC", agent_id="ag-1", is_sidechain=True, message_id="x1",
                    attributes=spawned("toolu_1")))
    snap = tmp_path / "graph"
    write_snapshot(build(records_table(rows)).graph, snap)
    invoke("view", "--snapshot", snap, "--out", tmp_path / "site")
    index = page_data(tmp_path / "site" / "index.html")["sessions"]
    assert sorted(r["id"] for r in index) == sorted(nasty)
    pages = {r["id"]: r["href"] for r in index}
    assert len({h.lower() for h in pages.values()}) == len(nasty)  # apart on any file system
    for sid, href in pages.items():
        assert re.fullmatch(r"sessions/[A-Za-z0-9._-]+\.html", href), href
        assert page_data(tmp_path / "site" / href)["session"]["id"] == sid
    assert sorted(p.name for p in (tmp_path / "site").iterdir()) == \
        ["graphkit-export.json", "index.html", "sessions"]


@pytest.mark.slow
def test_a_folder_that_is_not_a_site_is_never_replaced(snapshot: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    res = invoke("view", "--snapshot", snapshot, "--out", mine, code=2)
    assert len(res.stderr.strip().splitlines()) == 1
    assert (mine / "notes.txt").read_text() == "keep me"
    site = tmp_path / "site"
    for _ in range(2):  # a site is replaced by the next one
        invoke("view", "--snapshot", snapshot, "--out", site)
    assert (site / "index.html").is_file()
    # A file of the user's put into the site: the next site would delete it, so it is refused.
    (site / "sessions" / "my-notes.txt").write_text("keep me too")
    res = invoke("view", "--snapshot", snapshot, "--out", site, code=2)
    assert "'sessions/my-notes.txt'" in res.stderr
    assert (site / "sessions" / "my-notes.txt").read_text() == "keep me too"
    res = invoke("view", "--snapshot", snapshot, "--out", "-", code=2)
    assert "folder" in res.stderr


def _dom_links(dom: Dom) -> list[str]:
    return [a["href"] or "" for tag, a in dom.elements if tag == "a" and "href" in a]


@pytest.mark.slow
def test_chromium_lists_every_session_and_every_link_resolves(site: Path, browser: Browser,
                                                             snapshot: Path) -> None:
    index = page_data(site / "index.html")["sessions"]
    dom = Dom(browser.dump_dom(site / "index.html"))
    links = _dom_links(dom)
    assert sorted(links) == sorted(r["href"] for r in index)
    assert all((site / href).is_file() for href in links)
    text = dom.text()
    assert all(r["id"] in text for r in index)
    # Filtered by a workspace (from the URL fragment, as the page keeps its state).
    space = max({r["workspace"] for r in index if r["workspace"]},
                key=lambda w: sum(r["workspace"] == w for r in index))
    from urllib.parse import quote

    shown = Dom(browser.dump_dom(site / "index.html", "#workspace=" + quote(space)))
    assert sorted(_dom_links(shown)) == sorted(r["href"] for r in index
                                               if r["workspace"] == space)
    # A session page opened from the index draws its threads and links back.
    busiest = max(index, key=lambda r: r["threads"])
    page = Dom(browser.dump_dom(site / busiest["href"]))
    assert "../index.html" in _dom_links(page)
    for t in records("tree", busiest["id"], "--snapshot", snapshot):
        if t["type"] == "Thread":
            assert t["id"] in page.text()


@pytest.mark.slow
def test_a_history_of_3000_sessions_draws_without_freezing(browser: Browser,
                                                         tmp_path: Path) -> None:
    """The page draws 3,000 sessions in one go; the time it took is measured in the
    browser (performance.now around the first drawing) and must stay far below what
    a person notices as a frozen page."""
    import pyarrow.parquet as pq

    from samples.generate import generate

    table, truth = generate(3000, seed=11)
    pq.write_table(table, tmp_path / "rows.parquet")
    invoke("-q", "build", tmp_path / "rows.parquet", "--snapshot", tmp_path / "graph")
    invoke("view", "--snapshot", tmp_path / "graph", "--out", tmp_path / "site")
    timings = []
    for fragment in ("", "#sort=-cost_usd", "#sort=tokens"):
        html = browser.dump_dom(tmp_path / "site" / "index.html", fragment)
        rows = re.search(r'data-rows="(\d+)"', html)
        ms = re.search(r'data-render-ms="([\d.]+)"', html)
        assert rows is not None and ms is not None
        # 3,000 sessions, and the continuations the generator adds as sessions of their own
        assert int(rows.group(1)) == len(truth.sessions) >= 3000
        timings.append(float(ms.group(1)))
    print(f"3,000-session history drawn in {timings} ms")
    assert max(timings) < 1500, timings
