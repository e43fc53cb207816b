"""The lineage walking rules, written once for every store.

Stores differ in how they find a node's parents or children (a NetworkX
adjacency, an Arrow filter, edges fetched by one Cypher query); the rules for
walking them must not, or the stores would answer differently:

* up: on a fork take the smallest parent node id; stop before a node already
  seen (a cycle);
* down: breadth-first, each node once, at its smallest depth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


def parent_chain_ids(
    start: str, parents_of: Callable[[str], Iterable[str] | None]
) -> list[str]:
    """Node ids of the parents of ``start``, nearest first.

    >>> parent_chain_ids("c", {"c": ["b", "a"], "a": ["r"], "b": ["c"]}.get)
    ['a', 'r']
    >>> parent_chain_ids("a", {"a": ["b"], "b": ["a"]}.get)  # a cycle stops
    ['b']
    """
    out: list[str] = []
    seen = {start}
    current = start
    while True:
        options = [p for p in parents_of(current) or () if p not in seen]
        if not options:
            return out
        current = min(options)
        seen.add(current)
        out.append(current)


def descendant_ids(
    start: str, children_of: Callable[[list[str]], Iterable[str]]
) -> list[tuple[str, int]]:
    """Node ids below ``start`` with their depth (1 = a direct child).

    ``children_of`` takes a whole level at once, so a store can answer it with
    one vectorized lookup.

    >>> kids = {"r": ["a", "b"], "a": ["c"], "b": ["c"], "c": ["r"]}
    >>> descendant_ids("r", lambda level: [k for n in level for k in kids.get(n, [])])
    [('a', 1), ('b', 1), ('c', 2)]
    """
    out: list[tuple[str, int]] = []
    seen = {start}
    level = [start]
    depth = 0
    while level:
        depth += 1
        nxt = [c for c in dict.fromkeys(children_of(level)) if c not in seen]
        seen.update(nxt)
        out.extend((c, depth) for c in nxt)
        level = nxt
    return out
