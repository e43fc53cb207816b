"""Where message rows come from.

:func:`graphkit.sources.rows.read_sources` is the one entry point: it takes
any mix of row files (Parquet, Arrow IPC/Feather, JSON Lines, hive-partitioned
folders), HypAware Iceberg caches and Claude Code / Codex transcripts, and
returns one Arrow table of ``ai_gateway_messages`` rows shaped for a contract.
"""
