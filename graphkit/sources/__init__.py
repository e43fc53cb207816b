"""Where message rows come from.

:func:`graphkit.sources.read.read_sources` is the one entry point: it takes any mix of
row files (:mod:`.row_files`: Parquet, Arrow IPC/Feather, JSON Lines, hive-partitioned
folders), HypAware Iceberg caches (:mod:`.iceberg`) and Claude Code / Codex transcripts
(:mod:`.transcripts`), and returns their raw pieces with an account of the reading
(skipped lines, fingerprints). What to read comes as a plain
:class:`~graphkit.sources.read.ReadSpec`: this layer knows nothing of contracts.
:mod:`.full_schema` reads every column for ``graphkit rows``. The files that account
for unusable rows and lines are written by :mod:`graphkit.snapshot.rejects`.
"""
