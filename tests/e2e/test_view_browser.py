"""graphkit view in a real headless Chromium: every thread drawn, the lineage panel,
markup in transcripts shown as text and never run, a screenshot, a deep chain."""

from __future__ import annotations

import json
import re
import struct
import zlib
from pathlib import Path
from urllib.parse import quote

import pytest

from graphkit.builds.run import build, records_table
from graphkit.snapshot import write_snapshot
from tests.helpers.browser import Browser, Dom
from tests.helpers.cli import graphkit
from tests.helpers.rows import row
from tests.helpers.view_pages import (
    CONTENT,
    DEEP,
    DEEPEST,
    IMG,
    NASTY_AGENT,
    SCRIPT,
    SESSION,
    SVG,
    view,
)


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
    answer = json.loads(graphkit("lineage", DEEPEST, "--snapshot", samples, "--json").stdout)
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


def tree_threads(snap: Path, session: str) -> list[str]:
    """The session's thread ids as `graphkit tree --json` gives them."""
    r = graphkit("tree", session, "--snapshot", snap, "--json")
    return [x["id"] for x in map(json.loads, r.stdout.splitlines()) if x["type"] == "Thread"]


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
