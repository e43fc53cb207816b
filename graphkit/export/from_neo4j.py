"""A snapshot of a graph that lives in Neo4j (``graphkit snapshot --neo4j``).

The store gives back what it holds: labels, relationship types and property
values, typed from the values (:meth:`Neo4jStore.read_graph`). Neo4j keeps no
nulls, no integer widths and no natural keys, so a contract fills them in: it
projects no rows to get its empty tables, and each table read from Neo4j is
fitted to the contract's table of the same type (its columns in its order and
types, a property absent from every node a null column, the key, the edge
ends, the lineage vocabulary and the indexes). Labels, types and properties
the contract does not name are kept as found, never dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from graphkit.contract.loader import DEFAULT_CONTRACT, LoadedContract, load_contract
from graphkit.core.errors import StoreError
from graphkit.core.graph import NODE_ID, EdgeTable, GraphTables, NodeTable
from graphkit.core.ids import NODE_ID_RECIPE
from graphkit.core.schema import MESSAGES_SCHEMA
from graphkit.projection.conform import conform
from graphkit.projection.project import project

if TYPE_CHECKING:
    from graphkit.enrich.neo4j.store import Neo4jStore

GRANULARITIES = ("thread", "message")


def contract_template(contract: LoadedContract, granularity: str) -> GraphTables:
    """The contract's graph of no rows: every node and edge table, empty, typed
    (content properties included)."""
    # Through conform, as every build's rows are: it sets the column types.
    rows = conform(contract, MESSAGES_SCHEMA.empty_table(), "<contract template>")
    return project(contract, rows, granularity=granularity, include_content=True).graph


def _without_absent_content(like: GraphTables, found: GraphTables) -> None:
    """Drop from ``like`` the content properties Neo4j holds on no node: the graph
    was built without content, so they are not columns of nulls but no columns."""
    for t, props in like.meta.get("content_properties", {}).items():
        nt = like.nodes.get(t)
        got = found.nodes.get(t)
        if nt is None:
            continue
        absent = [p for p in props if p in nt.table.column_names
                  and (got is None or p not in got.table.column_names)]
        like.nodes[t] = NodeTable(t, nt.key, nt.table.drop_columns(absent))


def _fit(found: pa.Table | None, like: pa.Table, what: str) -> pa.Table:
    """``found`` with ``like``'s columns, in its order and types, then any others."""
    n = 0 if found is None else found.num_rows
    cols: list[pa.Array | pa.ChunkedArray] = []
    fields: list[pa.Field] = []
    for f in like.schema:
        if found is not None and f.name in found.column_names:
            try:
                cols.append(found.column(f.name).cast(f.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise StoreError(f"{what} property {f.name!r} holds {found.column(f.name).type}"
                                 f" values that do not fit the contract's {f.type}: {exc}",
                                 hint="snapshot without the contract (--no-contract)") from None
        else:
            cols.append(pa.nulls(n, f.type))
        fields.append(f)
    if found is not None:
        for f in found.schema:
            if f.name not in like.column_names:
                cols.append(found.column(f.name))
                fields.append(f)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def _granularity(contract: LoadedContract, found: GraphTables) -> str:
    """``message`` if Neo4j holds nodes only the message granularity makes."""
    thread = set(contract_template(contract, "thread").nodes)
    message = set(contract_template(contract, "message").nodes)
    extra = message - thread
    return "message" if any(t in found.nodes and found.nodes[t].table.num_rows
                            for t in extra) else "thread"


def fit_to_contract(found: GraphTables, contract: str | LoadedContract = DEFAULT_CONTRACT,
                    granularity: str | None = None) -> GraphTables:
    """``found`` (tables read from a store) typed and keyed as ``contract`` makes them.

    ``granularity`` None picks ``message`` when the store holds nodes only
    that granularity makes, else ``thread``.
    """
    c = contract if isinstance(contract, LoadedContract) else load_contract(contract)
    gran = granularity or _granularity(c, found)
    like = contract_template(c, gran)
    _without_absent_content(like, found)
    out = GraphTables(like.contract_name, like.contract_version, like.id_recipe, gran,
                      meta=dict(like.meta), lineage=like.lineage)
    for t, nt in like.nodes.items():
        got = found.nodes.get(t)
        out.nodes[t] = NodeTable(t, nt.key, _fit(got.table if got else None, nt.table,
                                                f"node {t}"))
    for t, et in like.edges.items():
        eg = found.edges.get(t)
        out.edges[t] = EdgeTable(t, et.source_type, et.target_type,
                                 _fit(eg.table if eg else None, et.table, f"relationship {t}"))
    for t, nt in found.nodes.items():
        out.nodes.setdefault(t, nt)
    for t, et in found.edges.items():
        out.edges.setdefault(t, et)
    return out


def read_neo4j_graph(store: Neo4jStore, *,
                     contract: str | LoadedContract | None = DEFAULT_CONTRACT,
                     granularity: str | None = None) -> GraphTables:
    """The graph in ``store`` as tables, fitted to ``contract`` (None: as found)."""
    found = store.read_graph()
    if contract is None:
        found.contract_name = "neo4j"
        found.id_recipe = NODE_ID_RECIPE  # the ids are kept as found
        for t, nt in found.nodes.items():  # and, no natural key known, are their own key
            found.nodes[t] = NodeTable(t, nt.key or (NODE_ID,), nt.table)
        return found
    return fit_to_contract(found, contract, granularity)


def snapshot_neo4j(store: Neo4jStore, directory: str | Path, *,
                   contract: str | LoadedContract | None = DEFAULT_CONTRACT,
                   granularity: str | None = None,
                   include_content: bool = False) -> dict[str, Any]:
    """Write a snapshot of the graph in the Neo4j ``store`` to the folder ``directory``
    and return its manifest (``graphkit snapshot --neo4j``).

    Neo4j keeps no nulls, integer widths or natural keys, so ``contract`` fills them
    in: each table read is fitted to the contract's table of its type. Labels, types
    and properties the contract does not name are kept as found, never dropped.

    Parameters
    ----------
    store : Neo4jStore
        A connected store (:func:`graphkit.open_neo4j`).
    directory : str or Path
        The snapshot folder (written as :func:`graphkit.write_snapshot` writes).
    contract : str, LoadedContract or None
        The contract the graph was built with (None: every table as found, its ids
        its keys).
    granularity : {"thread", "message"}, optional
        The graph's granularity (default: as the graph says).
    include_content : bool
        Keep the properties computed from message content.

    Returns
    -------
    dict
        The manifest written.

    Raises
    ------
    StoreError
        The server cannot be read, or what it holds does not fit the contract.
    SnapshotError
        ``directory`` cannot be written (a folder graphkit did not write is refused).

    Examples
    --------
    Needs a Neo4j server holding a graph (``graphkit load``), so not run here:

    >>> from graphkit.enrich.open import open_neo4j
    >>> with open_neo4j() as neo:  # doctest: +SKIP
    ...     manifest = snapshot_neo4j(neo, "out/from-neo4j")
    >>> manifest["counts"]["nodes"]["Session"]  # doctest: +SKIP
    14
    """
    from graphkit.snapshot import write_snapshot

    graph = read_neo4j_graph(store, contract=contract, granularity=granularity)
    source = {"source": "neo4j", "uri": store.config.display_uri,
              "database": store.config.database}
    summary = {"nodes": graph.node_counts(), "edges": graph.edge_counts()}
    return write_snapshot(graph, directory, inputs=[source], summary=summary,
                          include_content=include_content)
