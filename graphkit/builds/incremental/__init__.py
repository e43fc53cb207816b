"""Transcript builds by link group, keeping the graph of every group a change cannot reach.

A *link group* is the set of transcript files whose sessions are tied together: a
session, its subagents' files, the sessions it continues (resume, fork, compaction) and
Codex children with their parents. A change to one file can only change its group's
graph, so a rebuild re-parses the changed files, reprojects their groups and merges the
result with the kept graphs of the others (:mod:`.splice`). :mod:`.state` is what is kept
between builds, :mod:`.parts` the partial graphs, :mod:`.merged` the last merge.
"""
