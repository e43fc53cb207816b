"""graphkit view: a self-contained HTML page, checked in a real headless Chromium."""

from __future__ import annotations

import json
import re
import struct
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from click.testing import CliRunner, Result

from graphkit.builds.run import build, records_table
from graphkit.cli import cli
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.snapshot import write_snapshot
from graphkit.view import embed_json, render_html, session_view
from tests.helpers.browser import Browser, Dom
from tests.helpers.rows import row, spawned

DEEP = "8299ed6e-811c-4fa7-b124-c205cd625a7f"  # the sample session with depth-4 subagents
DEEPEST = "818d8962058765a6"
# Transcript strings that would run script if they reached the page as markup.
# Each sets a marker on the page the test then looks for.
IMG = """<img src=x onerror="document.documentElement.setAttribute('data-pwned','img')">"""
SCRIPT = ("</script><script>document.documentElement.setAttribute('data-pwned','script')"
          "</script>")
SVG = """<svg/onload="document.documentElement.setAttribute('data-pwned','svg')">"""
NASTY_AGENT = "ag<b>2</b>&amp;"
SESSION = "5e55-<i>x</i>"
CONTENT = "SECRET-CONTENT " + SCRIPT + " \u2028 line & <b>bold</b>"


def invoke(*args: Any) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory, sample_rows: Path) -> Path:
    snap = tmp_path_factory.mktemp("view") / "graph"
    assert invoke("build", sample_rows, "--snapshot", snap).exit_code == 0
    return snap


def _nasty_rows() -> list[dict[str, Any]]:
    """A Claude session whose transcript strings are markup: a subagent whose
    type and description are HTML, a nested one whose id and model are."""
    return [
        row(SESSION, message_id="m1", role="user", content_text=CONTENT),
        row(SESSION, message_id="m2", part_type="tool_call", tool_name="Task",
            tool_call_id="toolu_1", model="claude-sonnet-4-5", content_text="spawning"),
        row(SESSION, agent_id="ag-1", is_sidechain=True, message_id="a1",
            attributes=spawned("toolu_1", agent_type=IMG, description=SCRIPT),
            part_type="tool_call", tool_name="Agent", tool_call_id="toolu_2",
            model=SVG, content_text=IMG),
        row(SESSION, agent_id=NASTY_AGENT, is_sidechain=True, message_id="b1",
            attributes=spawned("toolu_2", agent_type="Explore"), model="claude-haiku-4-5",
            content_text=CONTENT),
    ]


@pytest.fixture(scope="module")
def nasty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A message-granularity snapshot with content, of :func:`_nasty_rows`."""
    result = build(records_table(_nasty_rows()), granularity="message", include_content=True)
    snap = tmp_path_factory.mktemp("nasty") / "graph"
    write_snapshot(result.graph, snap, include_content=True)
    return snap


def tree_threads(snap: Path, session: str) -> list[str]:
    """The session's thread ids as `graphkit tree --json` gives them."""
    r = invoke("tree", session, "--snapshot", snap, "--json")
    return [x["id"] for x in map(json.loads, r.stdout.splitlines()) if x["type"] == "Thread"]


def view(snap: Path, session: str, out: Path, *extra: str) -> Path:
    r = invoke("view", session, "--snapshot", snap, "--out", out, *extra)
    assert r.exit_code == 0, r.output
    return out


@pytest.mark.parametrize("session", [DEEP, "b40de56d-1cd8-4fc1-a309-66194791c2e9"])
def test_every_thread_is_in_the_rendered_dom(samples: Path, browser: Browser, tmp_path: Path,
                                             session: str) -> None:
    page = view(samples, session, tmp_path / "v.html")
    dom = Dom(browser.dump_dom(page))
    assert ("html", {"lang": "en", "data-graphkit-view": "ready"}) in dom.elements, \
        "the page's script did not run to the end"
    expected = tree_threads(samples, session)
    assert len(expected) > 1
    # Drawn in the tree's order: the main thread first, children by start time.
    assert dom.attr_values("data-thread-id") == expected
    text = dom.text()
    assert all(t in text for t in expected)
    assert session in text


def test_the_lineage_panel_shows_what_graphkit_lineage_says(samples: Path, browser: Browser,
                                                            tmp_path: Path) -> None:
    page = view(samples, DEEP, tmp_path / "v.html")
    dom = Dom(browser.dump_dom(page, f"#thread={DEEPEST}"))
    answer = json.loads(invoke("lineage", DEEPEST, "--snapshot", samples, "--json").stdout)
    # The panel reads down from the session: ancestors reversed, then the thread itself.
    expected = [f"{r['type']} {r['id']}" for r in reversed(answer["ancestors"])]
    assert dom.attr_values("data-lineage") == [*expected, f"Thread {DEEPEST}"]
    assert len(expected) == 5  # the session and four threads above a depth-4 subagent


def test_transcript_strings_show_as_text_and_run_nothing(nasty: Path, browser: Browser,
                                                         tmp_path: Path) -> None:
    page = view(nasty, SESSION, tmp_path / "v.html", "--include-content")
    raw = page.read_text()
    # In the file: no markup from the data, and the data element is not closed early.
    assert "<img" not in raw and "<svg" not in raw and "<b>" not in raw
    assert raw.count("</script>") == 2
    for fragment in ("", "#thread=" + quote(NASTY_AGENT, safe=""), "#thread=ag-1"):
        dom = Dom(browser.dump_dom(page, fragment))
        assert ("html", {"lang": "en", "data-graphkit-view": "ready"}) in dom.elements
        assert not [a for _, a in dom.elements if "data-pwned" in a], fragment
        # (The page itself uses <b> for the header's figures, never <img>, <svg> or <i>.)
        assert not [t for t, _ in dom.elements if t in ("img", "svg", "i")], fragment
        text = dom.text()
        assert SESSION in text and NASTY_AGENT in text and IMG in text and SVG in text
    # The nested subagent's page shows its messages as text, U+2028 and all.
    dom = Dom(browser.dump_dom(page, "#thread=" + quote(NASTY_AGENT, safe="")))
    assert CONTENT in dom.text()
    assert dom.attr_values("data-lineage") == [f"Session {SESSION}", f"Thread {SESSION}",
                                               "Thread ag-1", f"Thread {NASTY_AGENT}"]
    dom = Dom(browser.dump_dom(page, "#thread=ag-1"))
    assert SCRIPT in dom.text()  # the agent's description


def test_content_only_with_include_content(nasty: Path, tmp_path: Path) -> None:
    page = view(nasty, SESSION, tmp_path / "v.html").read_text()
    assert "SECRET-CONTENT" not in page
    data = _embedded(page)
    assert data["include_content"] is False
    assert all(t["content"] is None and t["props"] == {} for t in data["threads"])
    with_content = _embedded(view(nasty, SESSION, tmp_path / "c.html",
                                  "--include-content").read_text())
    texts = [m["text"] for t in with_content["threads"] for m in t["content"]]
    assert CONTENT in texts and IMG in texts


def _embedded(page: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="graphkit-data">(.*?)</script>', page,
                  re.S)
    assert m is not None
    return dict(json.loads(m.group(1)))


def test_the_page_is_self_contained_and_its_data_round_trips(nasty: Path,
                                                             tmp_path: Path) -> None:
    data = session_view(SnapshotReader(nasty), SESSION, include_content=True)
    page = render_html(data)
    assert _embedded(page) == data
    template = page.replace(embed_json(data), "")
    dom = Dom(template)
    assert not [(t, a) for t, a in dom.elements if "src" in a or "href" in a]
    assert [t for t, _ in dom.elements if t in ("link", "iframe", "object", "embed",
                                                "img")] == []
    (csp,) = [a["content"] for t, a in dom.elements
              if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp is not None and "default-src 'none'" in csp and "unsafe" not in csp
    assert "http:" not in template and "https:" not in template


def test_view_data_from_the_tree(samples: Path) -> None:
    data = session_view(SnapshotReader(samples), DEEP)
    threads = data["threads"]
    by_id = {t["id"]: i for i, t in enumerate(threads)}
    deepest = threads[by_id[DEEPEST]]
    assert deepest["depth"] == 5 and deepest["kind"] == "subagent"
    # Every parent comes before its children and is one level up.
    for t in threads:
        if t["parent"] is not None:
            assert t["parent"] < by_id[t["id"]]
            assert threads[t["parent"]]["depth"] == t["depth"] - 1
    assert all(t["model"] and t["last_seen"] >= t["first_seen"] for t in threads)
    assert data["session"]["messages"] == sum(t["messages"] for t in threads)


def test_view_cli_errors_and_stdout(samples: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["view", "nope", "--snapshot", str(samples), "--out",
                                 str(tmp_path / "v.html")])
    assert r.exit_code == 2 and "no session has the id 'nope'" in r.output
    assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / "v.html").exists()
    r = CliRunner().invoke(cli, ["view", DEEP, "--snapshot", str(samples), "--out", "-"])
    assert r.exit_code == 0 and r.stdout.startswith("<!doctype html>")


def _png_size_and_colours(png: Path) -> tuple[int, int, int]:
    raw = png.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", raw[16:24])
    chunks, at = b"", 8
    while at < len(raw):
        (n,) = struct.unpack(">I", raw[at:at + 4])
        if raw[at + 4:at + 8] == b"IDAT":
            chunks += raw[at + 8:at + 8 + n]
        at += 12 + n
    return width, height, len(set(zlib.decompress(chunks)))


def test_screenshot_renders(samples: Path, browser: Browser, tmp_path: Path) -> None:
    page = view(samples, DEEP, tmp_path / "v.html")
    shot = browser.screenshot(page, tmp_path / "v.png", f"#thread={DEEPEST}")
    width, height, values = _png_size_and_colours(shot)
    assert (width, height) == (1400, 600)
    assert values > 50  # text, bars and badges, not a blank page


def test_a_deep_chain_draws_at_most_sixteen_guides_a_row(browser: Browser,
                                                          tmp_path: Path) -> None:
    # Was: one guide mark per level on every row, ~2·10⁸ elements for a chain 20,000
    # deep. Now the marks stop at graphkit tree's DRAWN_LEVELS and a deeper row says
    # its depth in a badge; every thread is still drawn, in order.
    from graphkit.cli.query import DRAWN_LEVELS

    n = 2 * DRAWN_LEVELS
    tids = ["deep-s"] + [f"t{i:03d}" for i in range(1, n + 1)]
    rows = [row("deep-s", conversation_id=tids[i],
                parent_thread_id=tids[i - 1] if i else None, provider="openai")
            for i in range(n + 1)]
    write_snapshot(build(records_table(rows)).graph, tmp_path / "snap")
    page = view(tmp_path / "snap", "deep-s", tmp_path / "v.html")
    html = browser.dump_dom(page)
    dom = Dom(html)
    assert dom.attr_values("data-thread-id") == tids
    per_row = [row_html.count('class="guide"') for row_html in
               html.split('role="treeitem"')[1:]]
    assert per_row == [min(d, DRAWN_LEVELS) for d in range(n + 1)]
    badges = re.findall(r'class="badge deep">depth (\d+)<', html)
    assert badges == [str(d) for d in range(DRAWN_LEVELS + 1, n + 1)]
