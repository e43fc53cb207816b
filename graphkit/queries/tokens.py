"""Token counts and the order a session's threads are added up in: what
:mod:`.usage` (any store) and :mod:`.usage_columns` (a store of Arrow tables) share.

>>> (Tokens(1, 2) + Tokens.of({"input_tokens": 3, "cache_read_input_tokens": None})).astuple()
(4, 2, 0, 0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from graphkit.queries.model import TreeNode

TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                "cache_read_input_tokens")
# What Claude bills beyond the four counts, on threads and USED_MODEL edges where the
# rows carry some (sparse properties: absent, they read as 0): the 1-hour part of the
# cache writes and web searches.
BILLING_FIELDS = ("cache_creation_1h_input_tokens", "web_search_requests")
# On a USED_MODEL edge: the advisor its model consulted, and the advisor's own tokens.
ADVISOR_MODEL = "advisor_model"
ADVISOR_FIELDS = tuple(f"advisor_{f}" for f in (*TOKEN_FIELDS, BILLING_FIELDS[0]))
# What a USED_MODEL edge is read for: its model's tokens and billing, and its advisor's.
EDGE_FIELDS = (*TOKEN_FIELDS, *BILLING_FIELDS, ADVISOR_MODEL, *ADVISOR_FIELDS)
# The default contract's names for the per-model breakdown.
USED_MODEL = "USED_MODEL"
MODEL = "Model"
MODEL_KEY = "model"
UNKNOWN_MODEL = "(no model)"


def count(value: Any) -> int:
    """A token count; null, NaN and infinite (a float column from a stray value) are 0."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return 0
    return int(value)


@dataclass(frozen=True)
class Tokens:
    """Four token counts, and what is billed beside them: of the cache writes, the part
    written for an hour (``cache_creation_1h_input_tokens``, counted in
    ``cache_creation_input_tokens`` too) and web searches (no tokens). Adding two adds
    each."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_1h_input_tokens: int = 0
    web_search_requests: int = 0

    @classmethod
    def of(cls, values: dict[str, Any]) -> Tokens:
        """The counts in ``values`` (missing or null: 0)."""
        return cls(*[count(values.get(f)) for f in (*TOKEN_FIELDS, *BILLING_FIELDS)])

    @classmethod
    def advisor(cls, values: dict[str, Any]) -> Tokens:
        """The advisor's tokens a ``USED_MODEL`` edge's ``values`` hold
        (:data:`ADVISOR_FIELDS`)."""
        return cls(*[count(values.get(f)) for f in ADVISOR_FIELDS])

    # Field by field, not zipped tuples: `usage` adds a few Tokens per thread, and the
    # generic form was ~40% of its time on a session of 50k threads.
    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(self.input_tokens + other.input_tokens,
                      self.output_tokens + other.output_tokens,
                      self.cache_creation_input_tokens + other.cache_creation_input_tokens,
                      self.cache_read_input_tokens + other.cache_read_input_tokens,
                      self.cache_creation_1h_input_tokens + other.cache_creation_1h_input_tokens,
                      self.web_search_requests + other.web_search_requests)

    def __sub__(self, other: Tokens) -> Tokens:
        return Tokens(self.input_tokens - other.input_tokens,
                      self.output_tokens - other.output_tokens,
                      self.cache_creation_input_tokens - other.cache_creation_input_tokens,
                      self.cache_read_input_tokens - other.cache_read_input_tokens,
                      self.cache_creation_1h_input_tokens - other.cache_creation_1h_input_tokens,
                      self.web_search_requests - other.web_search_requests)

    def billed(self) -> bool:
        """Whether it holds anything billed beside the four counts."""
        return bool(self.cache_creation_1h_input_tokens or self.web_search_requests)

    def astuple(self) -> tuple[int, int, int, int]:
        """The counts in :data:`TOKEN_FIELDS` order."""
        return (self.input_tokens, self.output_tokens, self.cache_creation_input_tokens,
                self.cache_read_input_tokens)

    def total(self) -> int:
        """All four added."""
        return sum(self.astuple())

    def to_json(self) -> dict[str, int]:
        """``{"input_tokens", "output_tokens", "cache_creation_input_tokens",
        "cache_read_input_tokens"}``."""
        # Written out: `usage --json` writes four of these per thread.
        out = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
               "cache_creation_input_tokens": self.cache_creation_input_tokens,
               "cache_read_input_tokens": self.cache_read_input_tokens}
        if self.cache_creation_1h_input_tokens or self.web_search_requests:
            # Only where there are some: answers of data without them stay as they were.
            out["cache_creation_1h_input_tokens"] = self.cache_creation_1h_input_tokens
            out["web_search_requests"] = self.web_search_requests
        return out


def add_all(items: Iterable[Tokens]) -> Tokens:
    """The sum of ``items``."""
    some = list(items)
    if len(some) == 1:  # most sessions of a big snapshot are one thread
        return some[0]
    return Tokens(sum(t.input_tokens for t in some), sum(t.output_tokens for t in some),
                  sum(t.cache_creation_input_tokens for t in some),
                  sum(t.cache_read_input_tokens for t in some),
                  sum(t.cache_creation_1h_input_tokens for t in some),
                  sum(t.web_search_requests for t in some))


# (node id, thread id, kind, agent type, parent thread's id, depth): a thread of a
# session in tree order.
Step = tuple[str, str, Any, Any, Any, int]


def walk_steps(root: TreeNode) -> list[Step]:
    """The threads under ``root`` in tree order: depth first, children in order."""
    # A loop, not recursion: a chain of subagents can be thousands deep
    # (10,000 was a RecursionError).
    out: list[Step] = []
    stack: list[tuple[TreeNode, str | None, int]] = [
        (c, None, 0) for c in reversed(root.children)]
    while stack:
        c, above, d = stack.pop()
        info = c.info
        if info is not None:  # every child of a session tree is a thread
            out.append((info.node_id, info.id, info.kind, info.agent_type, above, d))
        stack.extend((k, c.ref.id, d + 1) for k in reversed(c.children))
    return out


def add_model(models: dict[str, dict[str, Tokens]], thread: str, name: Any,
              tokens: Tokens) -> None:
    """Add one ``USED_MODEL`` edge's ``tokens`` to ``thread``'s usage of model ``name``
    (none, or empty: :data:`UNKNOWN_MODEL`)."""
    per = models.setdefault(thread, {})
    key = str(name or UNKNOWN_MODEL)
    had = per.get(key)
    per[key] = tokens if had is None else had + tokens


def model_remainder(own: Tokens, models: dict[str, Tokens] | None) -> dict[str, Tokens]:
    """A thread's usage by model: its ``USED_MODEL`` counts (sorted by name), and what
    its own usage holds beyond them (rows naming no model) as :data:`UNKNOWN_MODEL`.

    >>> [(m, t.astuple()) for m, t in model_remainder(Tokens(5, 1), {"m": Tokens(3, 1)}).items()]
    [('m', (3, 1, 0, 0)), ('(no model)', (2, 0, 0, 0))]
    """
    if not models:  # the common cases first, without sorting or adding one thing up
        per, rest = {}, own
    elif len(models) == 1:
        per = dict(models)
        rest = own - next(iter(models.values()))
    else:
        per = dict(sorted(models.items()))
        rest = own - add_all(per.values())
    if rest.input_tokens or rest.output_tokens or rest.cache_creation_input_tokens \
            or rest.cache_read_input_tokens or rest.billed():  # usage on rows naming no model
        per[UNKNOWN_MODEL] = rest
    return per


def add_advisor(models: dict[str, dict[str, Tokens]], own: dict[str, Tokens], thread: str,
                values: dict[str, Any]) -> None:
    """A ``USED_MODEL`` edge's advisor tokens (``values``: its properties) as ``thread``'s
    usage of the advisor model, and as part of its own usage: the executor's counts
    leave them out."""
    name = values.get(ADVISOR_MODEL)
    tokens = Tokens.advisor(values)
    if not tokens.total() or thread not in own:
        return
    add_model(models, thread, name, tokens)
    own[thread] = own[thread] + tokens
