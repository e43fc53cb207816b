"""What a build is given: its sources, and every option in one frozen :class:`BuildOptions`.

The options are checked once, where they are made (the command line or a caller), and the
value then travels whole: :func:`graphkit.builds.snapshot.build_snapshot`, the in-memory
:func:`graphkit.builds.run.build`, the incremental and partitioned builds, the build key
(:mod:`graphkit.builds.uptodate`) and the ``--watch`` loop all read the fields they need.
Adding an option is a field here, a flag on ``graphkit build`` and the code that uses it.

Standard library only (and the leaf's error): the command line makes its options, and
asks whether anything changed, before the build's own imports.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from graphkit.contract.search import DEFAULT_CONTRACT
from graphkit.core.errors import GraphkitError

if TYPE_CHECKING:
    import pyarrow as pa

    from graphkit.contract.loader import LoadedContract
    from graphkit.enrich.base import IfExists  # typed only: the store checks the value

# What a caller may pass as sources: one path, several, or rows already in memory.
Sources: TypeAlias = "str | Path | Sequence[str | Path] | pa.Table"
# The values a choice may take, checked when the options are made; the types below say the
# same to a type checker (typing's Literal is not built at run time: ~1 ms of a no-op).
CHOICES = {"granularity": ("thread", "message"), "store": ("snapshot", "networkx", "neo4j"),
           "engine": ("local", "spark")}
if TYPE_CHECKING:
    Granularity = Literal["thread", "message"]
    Store = Literal["snapshot", "networkx", "neo4j"]
    Engine = Literal["local", "spark"]

# A field that decides the snapshot's bytes (with the contract, the inputs and the
# versions): the build key holds it, so changing it rebuilds.
SHAPES = {"shapes": True}


def is_table(sources: object) -> bool:
    """Whether ``sources`` are rows in memory: an Arrow table, which exists only once
    pyarrow is loaded (so asking costs a rebuild that keeps its snapshot no import).

    >>> is_table("samples/rows")
    False
    """
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(sources, pa.Table)


def as_paths(sources: str | Path | Sequence[str | Path]) -> list[Path]:
    """``sources`` as a list of paths: a single path is accepted where a list is.

    >>> as_paths("samples/rows")
    [PosixPath('samples/rows')]
    """
    if isinstance(sources, str | Path):
        return [Path(sources)]
    return [Path(p) for p in sources]


@dataclass(frozen=True, kw_only=True)
class BuildOptions:
    """Every option of a build, checked when made: a combination that cannot work is
    one :class:`~graphkit.core.errors.GraphkitError` line saying what to drop.

    ``contract``: a shipped contract's name, a YAML path or a loaded contract.
    ``granularity``: ``thread``, or ``message`` (Message nodes with NEXT edges).
    ``include_content``: keep message content in outputs (left out by default).
    ``strict``: fail on the first unreadable transcript line. ``since``/``until``: only
    records in that time. ``cache_dir``: the incremental build's folder (default:
    beside the snapshot). ``rejects_path``: where unusable rows go (default:
    ``SNAPSHOT.rejects.jsonl``). ``store``: where the graph goes besides the snapshot
    (``networkx``, ``neo4j``), with ``if_exists`` and ``batch_size`` for Neo4j.
    ``fingerprints``: record each input file's size and mtime in the manifest;
    ``hash_inputs``: each row file's SHA-256 too. ``engine`` (``local``, ``spark``),
    ``partitions`` (a count or ``"auto"``) and ``spark_master``: a partitioned build,
    bounded in memory. ``watch``/``poll``: rebuild when the sources change
    (:func:`graphkit.builds.watch.watch_builds`), polling every ``poll`` seconds.

    >>> from datetime import UTC, datetime
    >>> options = BuildOptions(granularity="message", since=datetime(2026, 11, 1, tzinfo=UTC))
    >>> options.granularity, options.partitioned
    ('message', False)
    >>> BuildOptions(partitions="8").partitions  # as the command line gives it
    8
    >>> BuildOptions(poll=0.5)
    Traceback (most recent call last):
    ...
    graphkit.core.errors.GraphkitError: --poll works with --watch only
    """

    contract: str | LoadedContract = DEFAULT_CONTRACT
    granularity: Granularity = field(default="thread", metadata=SHAPES)
    include_content: bool = field(default=False, metadata=SHAPES)
    strict: bool = field(default=False, metadata=SHAPES)
    since: datetime | None = field(default=None, metadata=SHAPES)
    until: datetime | None = field(default=None, metadata=SHAPES)
    cache_dir: Path | None = None
    # In the key as given: the files beside the snapshot are part of what is kept.
    rejects_path: Path | None = field(default=None, metadata=SHAPES)
    store: Store = "snapshot"
    if_exists: IfExists = "merge"
    batch_size: int | None = None
    fingerprints: bool = field(default=True, metadata=SHAPES)
    hash_inputs: bool = field(default=False, metadata=SHAPES)
    engine: Engine = "local"
    partitions: int | Literal["auto"] | None = None
    spark_master: str | None = None
    watch: bool = False
    poll: float | None = None

    def __post_init__(self) -> None:
        for name in ("cache_dir", "rejects_path"):  # a caller's str, as a path
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))
        if isinstance(self.contract, Path):
            object.__setattr__(self, "contract", str(self.contract))
        _check_choices(self)
        _check_combinations(self)
        object.__setattr__(self, "partitions", _partitions(self.partitions))

    @classmethod
    def of(cls, options: BuildOptions | None = None, **keywords: Any) -> BuildOptions:
        """``options`` with ``keywords`` in place of its values (no ``options``: the
        defaults): how the library's functions take either.

        >>> BuildOptions.of(BuildOptions(strict=True), granularity="message").strict
        True
        """
        if options is None:
            return cls(**keywords)
        return replace(options, **keywords) if keywords else options

    @property
    def partitioned(self) -> bool:
        """Whether the build runs partition by partition (``--engine``, ``--partitions``,
        ``--spark-master``) rather than in one process's memory."""
        return self.engine != "local" or self.partitions is not None or bool(self.spark_master)

    def shaping(self) -> dict[str, Any]:
        """The options besides the contract that decide the snapshot's bytes.

        >>> sorted(BuildOptions().shaping())[:3]
        ['fingerprints', 'granularity', 'hash_inputs']
        """
        return {f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get("shapes")}


def _check_choices(o: BuildOptions) -> None:
    """Values out of their range (the command line's flags cannot give them; a caller's
    arguments can)."""
    for name, allowed in CHOICES.items():
        value = getattr(o, name)
        if value not in allowed:
            raise GraphkitError(f"{name} {value!r} is not one of " + ", ".join(allowed))
    if o.batch_size is not None and o.batch_size < 1:
        raise GraphkitError(f"batch_size {o.batch_size!r} is not a positive number")
    if o.poll is not None and not o.poll > 0:
        raise GraphkitError(f"poll {o.poll!r} is not a positive number of seconds")
    if o.since is not None and o.until is not None and o.since > o.until:
        raise GraphkitError(f"since {o.since.isoformat()} is after until "
                            f"{o.until.isoformat()}")


def _check_combinations(o: BuildOptions) -> None:
    """Options that do not work together, in the order the command line has always
    said them."""
    if o.watch:
        # It keeps a snapshot (and its cache) up to date in this process; a store outside
        # it or another engine would redo their whole load each time.
        other = ("--store " + o.store if o.store != "snapshot" else
                 "--engine " + o.engine if o.engine != "local" else
                 "--partitions" if o.partitions is not None else
                 "--spark-master" if o.spark_master else None)
        if other is not None:
            raise GraphkitError(f"--watch keeps a snapshot up to date with the default "
                                f"engine; it does not work with {other} (build without "
                                f"--watch, or drop {other})")
    elif o.poll is not None:
        raise GraphkitError("--poll works with --watch only")
    if not o.partitioned:
        return
    if o.hash_inputs:
        raise GraphkitError("--hash-inputs works with the default engine only; drop --engine/"
                            "--partitions/--spark-master, or drop --hash-inputs")
    if o.store != "snapshot":
        raise GraphkitError("a partitioned build writes the snapshot only",
                            hint="build with --snapshot DIR, then `graphkit load DIR"
                                 + (" --engine spark`" if o.engine == "spark" else "`"))
    if o.spark_master and o.engine != "spark":
        raise GraphkitError("--spark-master needs --engine spark")


def _partitions(value: int | str | None) -> int | Literal["auto"] | None:
    """``--partitions``: a count, ``auto`` (sized from the input), or None (not given)."""
    if value is None:
        return None
    if isinstance(value, str):
        if value.strip().lower() == "auto":
            return "auto"
        try:
            n = int(value)
        except ValueError:
            n = 0
    else:
        n = value
    if n < 1:
        raise GraphkitError(f"--partitions {value!r} is not a positive number",
                            hint="give a count such as 8, or auto")
    return n
