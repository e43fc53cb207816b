"""Claude Code transcripts and Codex rollouts as ``ai_gateway_messages`` rows.

- :mod:`.read`: :func:`read_transcripts`, the entry point;
- :mod:`.files`: finding transcript files, telling the two kinds apart, default roots;
- :mod:`.claude`, :mod:`.codex`: one file's records → pre-rows and facts;
- :mod:`.buffer`: the row records (``Message``, ``Part``) and the per-file row buffer;
- :mod:`.links`: cross-file linking (resumes, subagent → spawning call, Codex roots);
- :mod:`.index`: the incremental index kept in ``cache_dir``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphkit.core.lazy import lazy_exports

_EXPORTS = {
    "SkippedLine": "graphkit.sources.transcripts.read",
    "TranscriptRows": "graphkit.sources.transcripts.read",
    "read_transcripts": "graphkit.sources.transcripts.read",
    "default_transcript_roots": "graphkit.sources.transcripts.files",
    "sniff_kind": "graphkit.sources.transcripts.files",
    "transcript_kind": "graphkit.sources.transcripts.files",
}
__all__ = ["SkippedLine", "TranscriptRows", "default_transcript_roots", "read_transcripts",
           "sniff_kind", "transcript_kind"]


__getattr__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from graphkit.sources.transcripts.files import (
        default_transcript_roots,
        sniff_kind,
        transcript_kind,
    )
    from graphkit.sources.transcripts.read import SkippedLine, TranscriptRows, read_transcripts
