"""How a build runs: sources → contract → projection → snapshot (and a store).

:mod:`.run` holds :func:`~graphkit.builds.run.build` and
:func:`~graphkit.builds.run.build_snapshot`; :mod:`.uptodate` decides when nothing
changed and the last snapshot stands; :mod:`.incremental` rebuilds transcripts by link
group (the sessions one change can reach); :mod:`.partitioned` builds beyond one
process's memory, on one machine or on Spark.

The package is ``builds``, not ``build``: ``graphkit.build`` is the front door's
function, and a subpackage of that name would replace it on first import.
"""
