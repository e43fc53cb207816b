"""What counts as content beyond the content columns: model-written text inside JSON
columns that are otherwise kept.

Standard library only: the up-to-date decision (a rebuild that keeps its snapshot loads
neither pyarrow nor numpy) puts this rule in its key.
"""

from __future__ import annotations

from collections.abc import Sequence

# Model-written text inside JSON columns that are otherwise kept: a subagent's
# description (from its spawning Agent/Task call or its .meta.json) is a line of the
# conversation, and a user pastes keys there as anywhere. Content: left out of the
# graph (a contract property read from it is a content property), of `rows` and of
# every output unless the user asks for content.
CONTENT_PATHS: dict[str, tuple[tuple[str, ...], ...]] = {
    "attributes": (("claude", "description"),),
}


def reads_content(column: str, path: Sequence[str]) -> bool:
    """Whether a JSON path into ``column`` reaches content (:data:`CONTENT_PATHS`): the
    path names a content value, or a document that holds one.

    >>> reads_content("attributes", ["claude", "description"])
    True
    >>> reads_content("attributes", ["claude"]), reads_content("attributes", ["usage"])
    (True, False)
    """
    return any(tuple(path[:len(c)]) == c or tuple(c[:len(path)]) == tuple(path)
               for c in CONTENT_PATHS.get(column, ()))
