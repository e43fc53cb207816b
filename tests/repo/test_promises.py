"""docs/guarantees.md's "Promises and the tests that hold them" names the tests that
hold each promise; every test it names must exist, so a renamed or deleted test breaks
this."""

from __future__ import annotations

import re

from tests.helpers.paths import REPO


def test_every_promise_names_tests_that_exist() -> None:
    doc = (REPO / "docs" / "guarantees.md").read_text(encoding="utf-8")
    section = doc.split("## Promises and the tests that hold them", 1)[1].split("\n## ", 1)[0]
    named, last = [], None
    for m in re.finditer(r"`(tests/[^`:]+)(?:::(\w+))?`|`::(\w+)`", section):
        path, test, more = m.groups()
        last = path or last
        named.append((last, test or more))
    assert len(named) >= 15 and {p for p, _ in named} >= {"tests/sources/transcripts/test_fuzz.py"}
    missing = [f"{p}::{t}" for p, t in named
               if not (REPO / p).exists() or (t and f"def {t}(" not in (REPO / p).read_text())]
    assert missing == []
