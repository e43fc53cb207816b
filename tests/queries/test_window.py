"""--since and --until: offsets, IANA zone names and bare days in a zone select the
same sessions; a zone that cannot be used, a missing zone database or a window before
year 1 is one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import REPO
from tests.helpers.rows import identity_cases


# 5,000 digits was a ValueError traceback (Python's int-string limit).
@pytest.mark.parametrize("when", ["99999999999 days ago", "1000000 weeks ago",
                                  "1" * 5000 + " days ago"])
def test_a_time_window_before_year_1_is_one_line(tmp_path: Path, when: str) -> None:
    # Was: OverflowError traceback from timedelta / datetime arithmetic.
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r, default=str) + "\n" for r in identity_cases()))
    for option in ("--since", "--until"):
        proc = graphkit("build", src, option, when, "--snapshot", tmp_path / "snap")
        one_line_error(proc, option, "before year 1")


def _session_ids(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, proc.stderr
    return [line.split("\t")[0] for line in proc.stdout.splitlines()[1:]]


@pytest.mark.slow
def test_since_and_until_take_iana_zone_names(tmp_path: Path) -> None:
    # Was: "--since '2026-11-20T18:00 Europe/Berlin' is not a time" (only offsets).
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    by_offset = _session_ids(graphkit("sessions", "--snapshot", snap, "--since",
                                      "2026-11-20T17:00+01:00", "--until", "2026-11-21"))
    assert by_offset == ["2e44158b-ae97-4a94-90ed-a82f8f6d0558",
                         "2ac34446-e883-41d4-9de0-099784b5a818",
                         "b40de56d-1cd8-4fc1-a309-66194791c2e9",
                         "c2ae35d2-43d8-4a97-b8b0-79e17711b757",
                         "75fdf37c-5d5e-41ad-a201-aafd93ea6a94"]
    for since, until in (("2026-11-20T17:00 Europe/Berlin", "2026-11-21 UTC"),
                         ("2026-11-20T11:00[America/New_York]", "2026-11-21[Etc/UTC]"),
                         ("2026-11-20T11:00-05:00[America/New_York]", "2026-11-21 utc")):
        got = _session_ids(graphkit("sessions", "--snapshot", snap, "--since", since,
                                    "--until", until))
        assert got == by_offset, (since, until)
    # A bare day in a zone is that day there: the 21st in Tokyo is 15:00 UTC on the
    # 20th to 15:00 UTC on the 21st.
    tokyo = _session_ids(graphkit("sessions", "--snapshot", snap,
                                  "--since", "2026-11-21 Asia/Tokyo",
                                  "--until", "2026-11-21 Asia/Tokyo"))
    assert tokyo == by_offset[:4]
    built = graphkit("build", REPO / "samples" / "rows", "--snapshot", tmp_path / "cut",
                     "--since", "2026-11-23 Pacific/Kiritimati", "--json")
    same = graphkit("build", REPO / "samples" / "rows", "--snapshot", tmp_path / "cut2",
                    "--since", "2026-11-22T10:00Z", "--json")  # Kiritimati is UTC+14
    assert built.returncode == 0 and json.loads(built.stdout)["nodes"]["Session"] == 5
    assert json.loads(built.stdout)["nodes"] == json.loads(same.stdout)["nodes"]


@pytest.mark.parametrize(("when", "words"), [
    ("2026-11-20 Europe/Berln", ["unknown time zone 'Europe/Berln'", "did you mean Europe/Berlin"]),
    ("2026-11-20T10:00[Mars/Olympus]", ["unknown time zone 'Mars/Olympus'", "IANA"]),
    ("2026-10-25T02:30 Europe/Berlin", ["happens twice", "+02:00 or", "+01:00"]),
    ("2026-03-29T02:30 Europe/Berlin", ["does not exist in Europe/Berlin"]),
    ("2026-11-20T10:00+01:00[America/New_York]", ["not America/New_York's", "-05:00"]),
    ("yesterday Europe/Berlin", ["is not a time", "before the zone"]),
    ("2026-11-20 ../../etc/passwd", ["is not a time"]),
    ("0001-01-01T05:00 Asia/Tokyo", ["outside the years 1 to 9999"]),
])
@pytest.mark.slow
def test_a_zone_name_that_cannot_be_used_is_one_line(tmp_path: Path, when: str,
                                                     words: list[str]) -> None:
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    for option in ("--since", "--until"):
        one_line_error(graphkit("sessions", "--snapshot", snap, option, when),
                       option, *words)


def test_without_a_zone_database_the_error_says_to_install_tzdata(tmp_path: Path) -> None:
    # A machine with no system zone database and no tzdata package (pyproject now
    # depends on it): one line saying so, not "unknown time zone" alone.
    stub = tmp_path / "stub" / "tzdata"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("")
    proc = graphkit("sessions", "--snapshot", tmp_path, "--since", "2026-11-20 Europe/Berlin",
                    env={"PYTHONPATH": f"{tmp_path / 'stub'}:{REPO}", "PYTHONTZPATH": ""},
                    process=True)
    one_line_error(proc, "no time zone database", "pip install tzdata")
