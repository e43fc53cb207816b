"""What a snapshot folder is: its file names, format numbers and error type
(shared by the writer, :mod:`.swap` and the reader, :mod:`.read`)."""

from __future__ import annotations

from graphkit.core.errors import GraphkitError

MANIFEST = "manifest.json"
# 2: a `kind` marker and per-table bytes + sha256. Format 1 (no checksums) is
# still read; anything newer is refused with its number.
FORMAT_VERSION = 2
OLDEST_FORMAT = 1
MARKER = "graphkit-snapshot"
# Rows per Parquet row group of a snapshot table. Fixed (not Parquet's 1 Mi
# default) so a writer that streams a table (graphkit.builds.partitioned) holds at most
# this many rows of it and still writes the same bytes as a whole-table write.
ROW_GROUP_ROWS = 128 * 1024
# The Parquet codec of every table a snapshot writer writes (graphkit.snapshot.write and the
# partitioned/Spark engines' writers, whose bytes must equal it). Chosen by measurement
# (1M-row thread snapshot, bench/PROFILE_NOTES.md at d9272aa): zstd 26.0 MB vs snappy 43.4 MB at the
# same write time, and faster to read back. Readers take any codec: older (snappy)
# snapshots read as before; the codec is no part of the format version.
COMPRESSION = "zstd"
MAX_MANIFEST_BYTES = 64 << 20


class SnapshotError(GraphkitError):
    """A snapshot folder is missing, incomplete or from an incompatible graphkit."""
