"""The build summary's table drawn without rich is rich's table, character for character."""

from __future__ import annotations

import random

import pytest

import graphkit.cli.build as build_cli


def _summary(rng: random.Random, n_nodes: int, n_edges: int, name_len: int) -> dict:
    def name() -> str:
        return rng.choice("ABCXYZ") + "".join(rng.choice("abcXY_09") for _ in range(
            rng.randint(0, name_len)))
    return {"rows_read": rng.randint(0, 10**7), "rows_used": 3, "rows_rejected": 0,
            "duplicate_rows": 1,
            "nodes": {name(): rng.choice([0, 7, 10**rng.randint(0, 12)])
                      for _ in range(n_nodes)},
            "edges": {name(): rng.randint(0, 10**9) for _ in range(n_edges)}}


def _printed(summary: dict, capsys: pytest.CaptureFixture[str],
             monkeypatch: pytest.MonkeyPatch, *, plain: bool) -> str:
    with monkeypatch.context() as m:
        if not plain:
            m.setattr(build_cli, "plain_table", lambda header, rows: None)
        build_cli.print_summary(summary, [])
    return capsys.readouterr().out


@pytest.mark.parametrize("seed", range(40))
def test_plain_table_equals_richs(seed: int, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    for var in build_cli._RICH_ENV:
        monkeypatch.delenv(var, raising=False)
    rng = random.Random(seed)
    summary = _summary(rng, rng.randint(0, 9), rng.randint(0, 9), [3, 12, 40, 70][seed % 4])
    rows = [("node", k, str(v)) for k, v in summary["nodes"].items()]
    rows += [("edge", k, str(v)) for k, v in summary["edges"].items()]
    drawn = build_cli.plain_table(("kind", "type", "count"), rows)
    fits = max([len(r[1]) for r in rows] + [4]) + max([len(r[2]) for r in rows] + [5]) + 14 <= 80
    assert (drawn is not None) == fits
    assert _printed(summary, capsys, monkeypatch, plain=True) == \
        _printed(summary, capsys, monkeypatch, plain=False)


def test_rich_draws_where_it_might_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [("node", "Session", "12")]
    monkeypatch.setenv("COLUMNS", "200")
    assert build_cli.plain_table(("kind", "type", "count"), rows) is None
    monkeypatch.delenv("COLUMNS")
    assert build_cli.plain_table(("kind", "type", "count"), [("node", "Sé", "1")]) is None
