"""BuildOptions: every build option in one frozen value, checked where it is made; the
command line's flags are its fields, and only the fields that shape the output are in the
build key."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from graphkit.builds.options import CHOICES, BuildOptions
from graphkit.builds.run import build
from graphkit.builds.uptodate import build_key
from graphkit.cli.app import cli
from graphkit.core.errors import GraphkitError

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "rows"
# `graphkit build`'s parameters that are not build options: where the snapshot goes,
# the times as typed (parsed into since/until), the password prompt and the output.
NOT_OPTIONS = {"sources", "snapshot_dir", "since", "until", "ask_password", "as_json",
               "quiet"}


def test_every_build_flag_is_a_field_of_the_options() -> None:
    # The command passes its flags on by name: a flag with no field would be a TypeError
    # at run time, a field with no flag an option the command line cannot give.
    flags = {p.name for p in cli.commands["build"].params} - NOT_OPTIONS
    names = {f.name for f in dataclasses.fields(BuildOptions)}
    assert flags <= names
    assert names - flags == {"since", "until", "fingerprints"}  # since/until: parsed first


def test_the_choices_are_the_flags_choices() -> None:
    params = {p.name: p for p in cli.commands["build"].params}
    for name, allowed in CHOICES.items():
        assert tuple(params[name].type.choices) == allowed, name  # type: ignore[attr-defined]


def test_the_options_are_frozen_and_made_anew_with_changes() -> None:
    options = BuildOptions(granularity="message")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.granularity = "thread"  # type: ignore[misc]
    changed = BuildOptions.of(options, strict=True)
    assert (changed.granularity, changed.strict, options.strict) == ("message", True, False)
    assert BuildOptions.of(options) is options and BuildOptions.of() == BuildOptions()
    assert BuildOptions(cache_dir="c", rejects_path="r.jsonl").cache_dir == Path("c")


@pytest.mark.parametrize(("given", "message"), [
    ({"poll": 1.0}, "--poll works with --watch only"),
    ({"watch": True, "store": "networkx"}, "does not work with --store networkx"),
    ({"watch": True, "engine": "spark"}, "does not work with --engine spark"),
    ({"watch": True, "partitions": "2"}, "does not work with --partitions"),
    ({"hash_inputs": True, "partitions": 2}, "--hash-inputs works with the default engine"),
    ({"partitions": "0"}, "--partitions '0' is not a positive number"),
    ({"partitions": "many"}, "--partitions 'many' is not a positive number"),
    ({"spark_master": "local[2]"}, "--spark-master needs --engine spark"),
    ({"engine": "spark", "store": "neo4j"}, "graphkit load DIR --engine spark"),
    ({"granularity": "session"}, "granularity 'session' is not one of thread, message"),
    ({"store": "sqlite"}, "store 'sqlite' is not one of snapshot, networkx, neo4j"),
    ({"batch_size": 0}, "batch_size 0 is not a positive number"),
    ({"since": datetime(2026, 2, 1, tzinfo=UTC), "until": datetime(2026, 1, 1, tzinfo=UTC)},
     "is after until"),
])
def test_what_cannot_work_is_one_line_when_made(given: dict[str, Any], message: str) -> None:
    with pytest.raises(GraphkitError) as err:
        BuildOptions(**given)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_partitions_as_typed_become_a_count_or_auto() -> None:
    assert BuildOptions(partitions="8").partitions == 8
    assert BuildOptions(partitions=" AUTO ").partitions == "auto"
    assert BuildOptions(partitions="auto").partitioned
    assert BuildOptions(engine="spark").partitioned and not BuildOptions().partitioned


def test_only_what_shapes_the_snapshot_is_in_the_build_key(tmp_path: Path) -> None:
    def key(**given: Any) -> str:
        return build_key([SAMPLES], tmp_path / "snap", BuildOptions(**given))

    plain = key()
    shaping = [{"granularity": "message"}, {"include_content": True}, {"strict": True},
               {"since": datetime(2026, 1, 1, tzinfo=UTC)}, {"rejects_path": tmp_path / "r"},
               {"hash_inputs": True}, {"fingerprints": False}]
    assert len({plain, *(key(**g) for g in shaping)}) == len(shaping) + 1
    for elsewhere in ({"cache_dir": tmp_path / "c"}, {"store": "networkx"},
                      {"batch_size": 10}, {"if_exists": "replace"}):
        assert key(**elsewhere) == plain, elsewhere


@pytest.mark.slow
def test_the_library_takes_options_or_the_keywords_that_make_them() -> None:
    by_keywords = build(SAMPLES, granularity="message", fingerprints=False)
    by_value = build(SAMPLES, BuildOptions(granularity="message", fingerprints=False))
    assert by_keywords.graph.node_counts() == by_value.graph.node_counts()
    assert "Message" in by_value.graph.node_counts()
    assert build(SAMPLES, BuildOptions(), granularity="message").graph.granularity == "message"
    with pytest.raises(TypeError, match="no_such_option"):
        build(SAMPLES, no_such_option=True)
    with pytest.raises(GraphkitError, match="writes a snapshot"):
        build(SAMPLES, partitions=2)
