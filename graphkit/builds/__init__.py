"""How a build runs: sources → contract → projection → snapshot (and a store).

:mod:`.options` holds :class:`~graphkit.builds.options.BuildOptions`, every build option
in one checked value; :mod:`.outputs` names every path a build writes; :mod:`.snapshot`
holds :func:`~graphkit.builds.snapshot.build_snapshot` (what ``graphkit build`` runs),
which asks :mod:`.uptodate` whether nothing changed and the last snapshot stands, and
else builds and writes (:mod:`.write`); :mod:`.run` holds the in-memory
:func:`~graphkit.builds.run.build`, :mod:`.result` what builds return; :mod:`.watch`
rebuilds whenever the sources change; :mod:`.incremental` rebuilds transcripts by link
group (the sessions one change can reach); :mod:`.partitioned` builds beyond one
process's memory, on one machine or on Spark.

The package is ``builds``, not ``build``: ``graphkit.build`` is the front door's
function, and a subpackage of that name would replace it on first import.
"""
