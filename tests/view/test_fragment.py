"""The view page opens whatever its address's fragment says (issue 31): a malformed
``#thread=`` escape (``100%``) stopped its script half-way; it is now taken as written."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from graphkit.cli import cli
from tests.helpers.browser import Browser, Dom
from tests.helpers.rows import row, spawned, write_parquet

SESSION = "s-frag"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("frag")
    rows = [row(SESSION, message_id="m1", part_type="tool_call", tool_name="Task",
                tool_call_id="toolu_1"),
            row(SESSION, agent_id="100%", attributes=spawned("toolu_1"), message_id="m2"),
            row(SESSION, agent_id="a b", attributes=spawned("toolu_1"), message_id="m3")]
    src = write_parquet(rows, folder / "rows.parquet")
    run = CliRunner().invoke
    assert run(cli, ["build", str(src), "--snapshot", str(folder / "snap")]).exit_code == 0
    out = folder / "v.html"
    r = run(cli, ["view", SESSION, "--snapshot", str(folder / "snap"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out


def selected(dom: Dom) -> list[str]:
    return [a.get("data-thread-id") or "" for _, a in dom.elements
            if "selected" in (a.get("class") or "").split() and "data-thread-id" in a]


@pytest.mark.slow
@pytest.mark.parametrize(("fragment", "thread"), [
    ("#thread=100%", "100%"),          # no valid escape: taken as written
    ("#thread=%E0%A4%A", SESSION),     # a cut escape naming nothing: the main thread
    ("#thread=100%25", "100%"),        # the escaped form still works
    ("#thread=a%20b", "a b"),
])
def test_a_malformed_fragment_still_draws_the_page(page: Path, browser: Browser,
                                                   fragment: str, thread: str) -> None:
    dom = Dom(browser.dump_dom(page, fragment))
    assert ("html", {"lang": "en", "data-graphkit-view": "ready"}) in dom.elements, \
        "the page's script did not run to the end"
    assert selected(dom) == [thread]
