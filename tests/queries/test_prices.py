"""Price tables and costs: a table that is no regular file, nests too deep, names a key
twice or an unknown field, or holds a price that is no number is one line naming it;
a cost past a float's range is one error, never ``inf``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from graphkit.core.errors import GraphkitError
from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import REPO
from tests.helpers.rows import (
    CLAUDE,
    usage_rows,
)


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000,
                                  '{"models": {"m": {"input": 1e400}}}',
                                  '{"models": {"m": {"input": -1}}}',
                                  '{"models": {"m": {"input": true}}}'])
def test_a_hostile_price_table_is_one_line(tmp_path: Path, text: str) -> None:
    # Was: RecursionError traceback (deep nesting); infinite, negative and true prices
    # were taken as prices.
    from graphkit.core.errors import GraphkitError
    from graphkit.queries.prices import load_prices

    path = tmp_path / "prices.json"
    path.write_text(text)
    with pytest.raises(GraphkitError) as info:
        load_prices(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "key-twice"])
def test_a_price_table_that_is_no_regular_file_or_names_a_key_twice_is_one_line(
        tmp_path: Path, kind: str) -> None:
    # Was: `usage --prices FIFO` waited for a writer forever, a link to
    # /dev/zero was read until memory ran out, and a second "models" object silently
    # replaced the first.
    from graphkit.core.errors import GraphkitError
    from graphkit.queries.prices import load_prices

    path = tmp_path / "prices.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_text('{"models": {"m": {"input": 1}}, "models": {}}')
    proc = graphkit("usage", "--snapshot", tmp_path / "none", "--prices", path)
    one_line_error(proc, str(path))
    with pytest.raises(GraphkitError, match=r"not a regular file|given twice"):
        load_prices(path)


def test_a_price_that_makes_an_infinite_cost_is_one_line(tmp_path: Path) -> None:
    # Was: untested; a price of 1e308 times 1,000 tokens printed "$inf" on the table
    # and `Infinity` (no JSON) with --json. (Without --by, piped output has no cost.)
    src = usage_rows(tmp_path, {1: {"input_tokens": 1000, "output_tokens": 10}})
    assert graphkit("build", src, "--snapshot", tmp_path / "snap").returncode == 0
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {"claude-sonnet-4-5": {"input": 1e308}}}))
    for fmt in (["--by", "model"], ["--by", "model", "--json"], ["--by", "agent-type", "--csv"]):
        proc = graphkit("usage", CLAUDE, "--snapshot", tmp_path / "snap",
                        "--prices", prices, *fmt)
        one_line_error(proc, str(prices), "claude-sonnet-4-5", "past what a number can hold")
    # A large price whose cost stays finite is priced.
    prices.write_text(json.dumps({"models": {"claude-sonnet-4-5": {"input": 1e300}}}))
    proc = graphkit("usage", CLAUDE, "--snapshot", tmp_path / "snap", "--prices",
                    prices, "--json", "--by", "model")
    assert proc.returncode == 0, proc.stderr
    assert "Infinity" not in proc.stdout and "1e+297" in proc.stdout


def test_costs_each_finite_whose_sum_is_not_are_one_error() -> None:
    # The session's and a subagent tree's totals add finite costs: their sum may not be.
    from graphkit.queries.prices import Cost, PriceTable, subtree_costs
    from graphkit.queries.usage import SessionUsage, ThreadUsage, Tokens

    table = PriceTable({"m": (1.5e308, 0.0, 0.0, 0.0)}, path="prices.json")
    one = Cost(usd=sys.float_info.max)
    assert table.cost("m", Tokens(1, 0, 0, 0)) == 1.5e302
    with pytest.raises(GraphkitError, match=r"prices\.json: the cost of model 'm' is past"):
        one.add(table, "m", Tokens(1, 0, 0, 0))
    # A subagent tree of two threads costing 1.5e308 each (a price table cannot reach
    # that per thread; the sum's guard is what is tested): each finite, the sum not.
    threads = [ThreadUsage(t, t, p, "thread", None, d, Tokens())
               for t, p, d in (("a", None, 0), ("b", "a", 1))]
    alone = subtree_costs(SessionUsage("s", Tokens(), Tokens(), threads[1:]), table,
                          [Cost(usd=1.5e308)])
    assert [c.usd for c in alone] == [1.5e308]
    with pytest.raises(GraphkitError, match="the cost of a subagent tree is past"):
        subtree_costs(SessionUsage("s", Tokens(), Tokens(), threads), table,
                      [Cost(usd=1.5e308)] * 2)


def test_a_price_of_400_digits_is_one_line_and_a_bom_is_read_as_nothing(
        tmp_path: Path) -> None:
    # Was: OverflowError traceback (math.isfinite of an int past a float's range); a
    # table starting with a byte-order mark was "not JSON (Unexpected UTF-8 BOM…)",
    # where a contract with one loads.
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    prices = tmp_path / "prices.json"
    prices.write_text('{"models": {"claude-sonnet-4-5": {"input": ' + "9" * 400 + "}}}")
    for extra in ([], ["--by", "model"], ["--json"]):
        one_line_error(graphkit("usage", "--snapshot", snap, "--prices", prices, *extra),
                       str(prices), "needs numbers")
    prices.write_text("\ufeff" + json.dumps({"models": {"claude-sonnet-4-5": {"input": 3}}}))
    proc = graphkit("usage", "--snapshot", snap, "--prices", prices, "--json")
    assert proc.returncode == 0, proc.stderr


def test_an_unknown_field_in_a_price_table_is_one_line_naming_its_place(
        tmp_path: Path) -> None:
    # Was: ignored without a word (a misspelt "inptu" left the model's input price at
    # its default, 0). Now refused as a contract's unknown key is, naming FILE:LINE:COL
    # and the known fields.
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    prices = tmp_path / "prices.json"
    prices.write_text('{"models": {\n  "claude-sonnet-4-5": {"input": 3},\n'
                      '  "claude-haiku-4-5": {"input": 1,\n      "inptu": 3}}}\n')
    for extra in ([], ["--by", "model"], ["--json"]):
        one_line_error(graphkit("usage", "--snapshot", snap, "--prices", prices, *extra),
                       f"{prices}:4:7: model 'claude-haiku-4-5' has an unknown field "
                       "'inptu'", "input, output, cache_creation, cache_read")
    prices.write_text('{"models": {"claude-sonnet-4-5": {"input": 3}}, "modles": {}}')
    one_line_error(graphkit("usage", "--snapshot", snap, "--prices", prices),
                   f"{prices}:1:49: the price table has an unknown field 'modles'",
                   "as_of, source, unit, models")
    # The shipped table, and one of every known field, still load.
    prices.write_text(json.dumps({"as_of": "x", "source": "y", "unit": "z", "models": {
        "claude-sonnet-4-5": {"input": 3, "output": 15, "cache_creation": 3.75,
                              "cache_read": 0.3}}}))
    assert graphkit("usage", "--snapshot", snap, "--prices", prices).returncode == 0
    assert graphkit("usage", "--snapshot", snap).returncode == 0
