"""The graph contract: a declarative, versioned mapping from row columns to nodes and
edges (``contracts/*.yaml``). :mod:`.loader` finds and checks a contract file,
:mod:`.model` and :mod:`.spec` say what it may hold, :mod:`.expr` its derived columns
and filters, :mod:`.cache` keeps checked contracts. Running it over rows is
:mod:`graphkit.projection`."""
