"""The graph contract: a declarative, versioned mapping from row columns to
nodes and edges (``contracts/*.yaml``), its checks, and the projection."""
