"""Claude Code transcripts and Codex rollouts as ``ai_gateway_messages`` rows.

- :mod:`.read`: :func:`read_transcripts`, the entry point;
- :mod:`.files`: finding transcript files, telling the two kinds apart, default roots;
- :mod:`.claude`, :mod:`.codex`: one file's records → pre-rows and facts;
- :mod:`.buffer`: the row records (``Message``, ``Part``) and the per-file row buffer;
- :mod:`.links`: cross-file linking (resumes, subagent → spawning call, Codex roots);
- :mod:`.index`: the incremental index kept in ``cache_dir``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    # Loaded on first use: the parser version (:mod:`.version`) is read by a rebuild
    # that finds nothing changed, before pyarrow is imported.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from graphkit.sources.transcripts.files import (
        default_transcript_roots,
        sniff_kind,
        transcript_kind,
    )
    from graphkit.sources.transcripts.read import SkippedLine, TranscriptRows, read_transcripts
