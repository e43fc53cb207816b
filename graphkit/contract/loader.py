"""Find, parse and check a contract file; every error points at its line.

Checks run in two stages, both before any row is projected:

1. :func:`load_contract` — the file against the contract schema and against
   itself (every column a rule uses is an input or a derived column; every
   edge end names a node type with a key of the same length).
2. :func:`graphkit.projection.conform.check_input_schema` — the contract
   against each source's Arrow schema.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphkit.contract import cache
from graphkit.contract.expr import Expr, parse_expr, validated_filter
from graphkit.contract.search import (
    DEFAULT_CONTRACT,
    available_contracts,
    contract_candidates,
    is_contract_path,
)
from graphkit.contract.spec import Contract, Filter, Unnest
from graphkit.core.errors import ContractError
from graphkit.core.files import open_regular
from graphkit.core.graph import LineageVocabulary
from graphkit.core.names import NAME_RULE, is_name

if TYPE_CHECKING:
    import yaml

# A contract is a page or two of YAML; these bounds keep a hostile file from
# costing more than a moment (the shipped contract is ~8 KiB and 5 deep).
MAX_CONTRACT_BYTES = 1 << 20
MAX_DEPTH = 64


def find_contract(name_or_path: str) -> Path:
    """The file of a contract given by shipped name or by path."""
    p = Path(name_or_path)
    if is_contract_path(name_or_path):
        if not p.is_file():
            # A folder, a FIFO or a device is there but no file (it was "not found").
            what = "contract file not found" if not p.exists() else (
                "is a folder, not a contract file" if p.is_dir() else
                "is no regular file (a pipe or device), not a contract file")
            raise ContractError(what, path=str(p),
                                hint="give a path to a .yaml contract or a shipped name")
        return p
    for cand in contract_candidates(name_or_path)[1:]:
        if cand.is_file():
            return cand
    raise ContractError(
        f"no contract named {name_or_path!r}",
        hint=f"shipped contracts: {', '.join(available_contracts()) or 'none'}",
    )


@dataclass
class LoadedContract:
    """A checked contract with its parsed expressions and source file."""

    spec: Contract
    path: Path
    derived: dict[str, Expr] = field(default_factory=dict)
    lines: dict[tuple[Any, ...], int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The contract's own name."""
        return self.spec.contract

    @property
    def version(self) -> int:
        """The contract's version."""
        return self.spec.version

    def line_of(self, *loc: Any) -> int | None:
        """The 1-based line of a location in the file, or of its nearest parent."""
        key = tuple(loc)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return None

    def error(self, message: str, *loc: Any, hint: str | None = None) -> ContractError:
        """A :class:`ContractError` pointing at ``loc`` in the contract file."""
        return ContractError(_one_line(message), path=str(self.path), line=self.line_of(*loc),
                             hint=hint)


def _one_line(text: str) -> str:
    # Names from the file (a key "a\nb") must not break the one-line error.
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _line_map(node: yaml.Node, path: tuple[Any, ...], out: dict[tuple[Any, ...], int]) -> None:
    import yaml

    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value
            out[(*path, key)] = k.start_mark.line + 1
            _line_map(v, (*path, key), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _line_map(v, (*path, i), out)


def _refuse_duplicate_keys(root: yaml.Node, path: Path) -> None:
    """A key twice in one mapping is an error: YAML loaders keep the last one and drop
    the first without a word (a second ``nodes:`` would lose every rule of the first)."""
    import yaml

    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for k, v in node.value:
                if k.value in seen:
                    raise ContractError(_one_line(f"key {k.value!r} appears twice in one "
                                                  "mapping"), path=str(path),
                                        line=k.start_mark.line + 1,
                                        hint="keep one of them")
                seen.add(k.value)
                todo.append(v)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)


def load_contract(name_or_path: str | Path = DEFAULT_CONTRACT) -> LoadedContract:
    """Return the contract named ``name_or_path``, loaded and checked.

    Parameters
    ----------
    name_or_path : str or Path
        A shipped contract's name (``ai-gateway-graph``), or a YAML file's path
        (anything ending ``.yaml``/``.yml``, or a file that exists).

    Returns
    -------
    LoadedContract
        ``name``, ``version``, ``path`` and ``spec``: the checked contract (nodes,
        edges, reject rules, lineage).

    Raises
    ------
    ContractError
        No contract has that name or path, or the file is not a valid contract (the
        message names its file, line and what to fix).

    Examples
    --------
    >>> c = load_contract()
    >>> c.name, [n.type for n in c.spec.nodes][:3]
    ('ai-gateway-graph', ['Session', 'Thread', 'Agent'])
    >>> load_contract("no-such-contract")
    Traceback (most recent call last):
    ...
    graphkit.core.errors.ContractError: no contract named 'no-such-contract'; shipped contracts: ...
    """
    path = find_contract(str(name_or_path))
    data = _read_bytes(path)
    entry = cache.read_entry(data)
    if entry is not None:
        loaded = _from_entry(path, entry)
        if loaded is not None:
            return loaded
    filters: list[list[Any]] = []

    def recorded(raw: Any) -> Filter:
        flt = validated_filter(raw)
        filters.append([raw, flt.model_dump()])
        return flt

    loaded = _load_fresh(path, _decode(data, path), recorded)
    cache.write_entry(data, {
        "spec": loaded.spec.model_dump(), "json": loaded.spec.model_dump_json(),
        "lines": [[list(k), v] for k, v in loaded.lines.items()], "filters": filters})
    return loaded


def _from_entry(path: Path, entry: dict[str, Any]) -> LoadedContract | None:
    """The contract a cache entry keeps (checked when it was written), or None if the
    entry does not hold together: then the file is loaded and checked afresh."""
    filters = iter(entry.get("filters", []))

    def replayed(raw: Any) -> Filter:
        # The same derive entries parse in the same order, so the filters come back
        # in the order they were checked; anything else means a stale entry.
        want, dump = next(filters)
        if want != raw:
            raise ValueError("stale entry")
        return Filter.from_dump(dump)

    try:
        spec = Contract.from_dump(entry["spec"], entry["json"])
        lines = {tuple(k): v for k, v in entry["lines"]}
        derived = {name: parse_expr(raw, replayed) for name, raw in spec.derive.items()}
    except (KeyError, TypeError, ValueError, StopIteration, AttributeError):
        return None
    return LoadedContract(spec=spec, path=path, derived=derived, lines=lines)


def _load_fresh(path: Path, text: str, make_filter: Callable[[Any], Filter]) -> LoadedContract:
    """Parse and check the contract text: YAML, the pydantic model, then its meaning."""
    import yaml
    from pydantic import ValidationError

    from graphkit.contract.model import Contract as ContractModel

    # libyaml when present: the same documents and marks, several times faster.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        _check_events(text, loader, path)
        node = yaml.compose(text, Loader=loader)
        raw = yaml.load(text, Loader=loader)  # a safe loader either way
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(exc, "problem", None)
        if isinstance(exc, yaml.reader.ReaderError):  # a character YAML refuses (NUL)
            line = text.count("\n", 0, exc.position) + 1
            problem = (f"the character U+{exc.character:04X} is not allowed"
                       if isinstance(exc.character, int) else exc.reason)
        raise ContractError(
            _one_line(f"not valid YAML: {problem or exc}"), path=str(path), line=line,
        ) from None
    lines: dict[tuple[Any, ...], int] = {}
    if node is not None:
        _line_map(node, (), lines)
        _refuse_duplicate_keys(node, path)
    loaded = LoadedContract(spec=None, path=path, lines=lines)  # type: ignore[arg-type]
    if not isinstance(raw, dict):
        raise loaded.error("a contract is a YAML mapping with `contract`, `version`, `input`, "
                           "`nodes` and `edges`")
    try:
        model = ContractModel.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(a for a in err["loc"] if not (isinstance(a, str) and a[:1].isupper()
                                                 and "[" in a))
        loc = tuple("from" if a == "from_" else "in" if a == "in_" else a for a in loc)
        where = ".".join(str(a) for a in loc) or "(top level)"
        more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise loaded.error(f"{where}: {err['msg']}{more}", *loc) from None
    loaded.spec = Contract.from_dump(model.model_dump(), model.model_dump_json())
    _check_semantics(loaded, make_filter)
    return loaded


def _read_bytes(path: Path) -> bytes:
    try:
        # Only a regular file: a FIFO given as --contract waited for a writer forever.
        with os.fdopen(open_regular(path), "rb") as f:
            data = f.read(MAX_CONTRACT_BYTES + 1)
    except OSError as exc:
        raise ContractError(f"cannot read contract: {exc.strerror or exc}",
                            path=str(path)) from None
    if len(data) > MAX_CONTRACT_BYTES:
        raise ContractError(f"contract file too large (over {MAX_CONTRACT_BYTES >> 20} MiB)",
                            path=str(path), hint="a contract is a page or two of YAML")
    return data


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Named by line and column, as every other contract error (round eight: "byte
        # 12782", counted from the start of the file).
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        utf16 = data[:2] in (b"\xff\xfe", b"\xfe\xff")
        raise ContractError(f"contract is not UTF-8 text (byte 0x{data[exc.start]:02X} at "
                            f"column {column})", path=str(path), line=line,
                            hint="save it as UTF-8" + (" (it is UTF-16)" if utf16 else ""),
                            ) from None


def _check_events(text: str, loader: Any, path: Path) -> None:
    """Refuse anchors, aliases and deep nesting before anything is built.

    An alias makes the document a graph: nine anchors of nine aliases each
    (a 431-byte "billion laughs") expand to 9**9 values in anything that walks
    the result, as the line map and the model validation do. A contract has no
    use for them, so they are refused outright, streaming over parser events
    (bounded memory), as is nesting deeper than :data:`MAX_DEPTH` (which would
    otherwise end in a RecursionError in the composer).
    """
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=loader):
        line = event.start_mark.line + 1 if event.start_mark is not None else None
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise ContractError("YAML anchors and aliases (&name, *name) are not allowed in a "
                                "contract", path=str(path), line=line,
                                hint="write the value out where it is used")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise ContractError(f"YAML nested deeper than {MAX_DEPTH} levels",
                                    path=str(path), line=line)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _check_names(c: LoadedContract) -> None:
    """Key columns and property names become Neo4j property names: same pattern as labels."""
    for i, n in enumerate(c.spec.nodes):
        for k in n.key:
            if not is_name(k):
                raise c.error(f"nodes[{i}].key column {k!r} cannot be a property name; it "
                              f"must match {NAME_RULE}", "nodes", i, "key",
                              hint="derive a column with a plain name and key on that")
    rules = [("nodes", i, r.properties) for i, r in enumerate(c.spec.nodes)]
    rules += [("edges", i, r.properties) for i, r in enumerate(c.spec.edges)]
    for part, i, props in rules:
        for p in props:
            if not is_name(p):
                raise c.error(f"{part}[{i}].properties: {p!r} must match {NAME_RULE}",
                              part, i, "properties", p)
    # A table's own columns: the node id and key, an edge's two ends. A property of the
    # same name made a second column of that name (a build traceback for `id`; for an
    # edge's `source`, a snapshot no reader could open).
    for i, n in enumerate(c.spec.nodes):
        for name in ["id", *n.key]:
            if name in n.properties or (name == "id" and "id" in n.key):
                where = ("key",) if name not in n.properties else ("properties", name)
                raise c.error(f"nodes[{i}] ({n.type}): {name!r} is already a column of the "
                              "node table (its id or key)", "nodes", i, *where,
                              hint="give the property another name")
    for i, e in enumerate(c.spec.edges):
        for name in ("source", "target"):
            if name in e.properties:
                raise c.error(f"edges[{i}] ({e.type}): {name!r} is already a column of the "
                              "edge table (its ends)", "edges", i, "properties", name,
                              hint="give the property another name")


def _check_semantics(c: LoadedContract,
                     make_filter: Callable[[Any], Filter] = validated_filter) -> None:
    _check_names(c)
    spec = c.spec
    known = set(spec.input)
    for name, raw in spec.derive.items():
        if name in spec.input:  # two columns of one name: the projection cannot tell them apart
            raise c.error(f"derive.{name} has the name of an input column", "derive", name,
                          hint="give the derived column a name of its own")
        try:
            expr = parse_expr(raw, make_filter)
        except ValueError as exc:
            raise c.error(f"derive.{name}: {exc}", "derive", name) from None
        missing = expr.columns() - known
        if missing:
            raise c.error(f"derive.{name} reads {sorted(missing)} which is neither an input "
                          "nor an earlier derived column", "derive", name,
                          hint="declare it under `input:`") from None
        c.derived[name] = expr
        known.add(name)

    extra: set[str] = set()  # the unnest fields of the rule being checked

    def need(cols: set[str] | list[str], *loc: Any) -> None:
        missing = {x for x in cols if x is not None and x != "*"} - known - extra
        if missing:
            raise c.error(f"{'.'.join(map(str, loc))} uses unknown column(s) {sorted(missing)}",
                          *loc, hint="declare them under `input:` or `derive:`")

    def need_filter(f: Filter | None, *loc: Any) -> None:
        if f is not None:
            need(f.columns(), *loc)

    if spec.dedupe:
        need([spec.dedupe], "dedupe")
    need(spec.order_by, "order_by")
    for i, r in enumerate(spec.reject):
        need_filter(r.when, "reject", i, "when")
    def unnest_fields(u: Unnest | None, *loc: Any) -> set[str]:
        if u is None:
            return set()
        need([u.column], *loc, "unnest", "column")
        clash = set(u.fields) & known
        if clash:
            raise c.error(f"{'.'.join(map(str, loc))}.unnest.fields names {sorted(clash)}, "
                          "which are already columns", *loc, "unnest", "fields",
                          hint="give the element fields new names")
        return set(u.fields)

    keys: dict[str, int] = {}
    folded_nodes: dict[str, str] = {}
    folded_edges: dict[str, str] = {}
    for i, n in enumerate(spec.nodes):
        extra = set()
        extra = unnest_fields(n.unnest, "nodes", i)
        if n.type in keys:
            raise c.error(f"node type {n.type!r} is defined twice", "nodes", i, "type",
                          hint="one rule per node type")
        _refuse_case_twin(c, folded_nodes, n.type, "node", "nodes", i)
        keys[n.type] = len(n.key)
        need(n.key, "nodes", i, "key")
        need_filter(n.where, "nodes", i, "where")
        for p, agg in n.properties.items():
            need([agg.column], "nodes", i, "properties", p)
        bad = set(n.index) - set(n.key) - set(n.properties)
        if bad:
            raise c.error(f"nodes[{i}].index names {sorted(bad)}, not a key or property",
                          "nodes", i, "index")
    unnest_of: dict[str, Unnest | None] = {}
    for i, e in enumerate(spec.edges):
        extra = set()
        extra = unnest_fields(e.unnest, "edges", i)
        _refuse_case_twin(c, folded_edges, e.type, "edge", "edges", i)
        if unnest_of.setdefault(e.type, e.unnest) != e.unnest:
            raise c.error(f"edges[{i}]: every {e.type} rule must unnest the same way",
                          "edges", i, "unnest",
                          hint="give the rules of one edge type the same `unnest` (or none)")
        for end_name, end in (("from", e.from_), ("to", e.to)):
            if end.type not in keys:
                raise c.error(f"edges[{i}].{end_name} names node type {end.type!r}, "
                              "which no node rule defines", "edges", i, end_name, "type",
                              hint=f"node types: {', '.join(keys)}")
            if len(end.key) != keys[end.type]:
                raise c.error(f"edges[{i}].{end_name}.key has {len(end.key)} part(s) but "
                              f"{end.type} nodes have a key of {keys[end.type]}",
                              "edges", i, end_name, "key")
            need([k for k in end.key if k is not None], "edges", i, end_name, "key")
        need_filter(e.where, "edges", i, "where")
        if e.join:
            need([e.join.column, e.join.matches, *e.join.same], "edges", i, "join")
            need_filter(e.join.where, "edges", i, "join", "where")
        if e.chain:
            need([*e.chain.within, *e.chain.order_by], "edges", i, "chain")
        for p, agg in e.properties.items():
            need([agg.column], "edges", i, "properties", p)
    _check_sums(c)
    _check_lineage(c)


def _refuse_case_twin(c: LoadedContract, folded: dict[str, str], name: str, kind: str,
                      *loc: Any) -> None:
    """Refuse a node (or edge) type that differs from another only in case: each type is
    a file of the snapshot (``nodes/Tool.parquet``, ``nodes/tool.parquet``) and of the
    folder exports, and where file names ignore case (macOS, Windows, many shared
    drives) the two are one file: a snapshot copied there loses a table."""
    other = folded.setdefault(name.casefold(), name)
    if other != name:
        raise c.error(f"{kind} types {other!r} and {name!r} differ only in case; their "
                      "tables would be one file where file names ignore case (macOS, "
                      "Windows)", *loc, "type", hint=f"rename one of the two {kind} types")


def _check_sums(c: LoadedContract) -> None:
    """A ``sum`` reads counts: never an id (a node's key, an edge end's, the dedupe
    key) nor a time. Summing one is the contract's mistake, so it is said here, with
    its line, rather than as every row of the data rejected for holding no number."""
    spec = c.spec
    ids: dict[str, str] = {}
    for n in spec.nodes:
        for k in n.key:
            ids.setdefault(k, f"the key of {n.type} nodes")
    for e in spec.edges:
        for end in (e.from_, e.to):
            for part in end.key:
                if part is not None:
                    ids.setdefault(part, f"the key of {end.type} nodes")
    for k in ([spec.dedupe] if isinstance(spec.dedupe, str) else list(spec.dedupe or [])):
        ids.setdefault(k, "the dedupe key")
    for name, col in spec.input.items():
        if col.type == "timestamp":
            ids.setdefault(name, "a time")
    rules: list[tuple[str, int, Any]] = [*(("nodes", i, n) for i, n in enumerate(spec.nodes)),
                                         *(("edges", i, e) for i, e in enumerate(spec.edges))]
    for where, i, rule in rules:
        for p, agg in rule.properties.items():
            if agg.sum is not None and agg.sum in ids:
                raise c.error(
                    f"{where}[{i}].properties.{p} sums column {agg.sum!r}, "
                    f"{ids[agg.sum]}, which holds no counts", where, i,
                    "properties", p,
                    hint="sum a column of numbers (a token or read count); count rows "
                         "with `count: \"*\"`, ids with `count_distinct`")


def _check_lineage(c: LoadedContract) -> None:
    """The lineage section names node types, edge types and properties that
    the contract's rules produce."""
    lin = c.spec.lineage
    if lin is None:
        return
    nodes = {n.type: n for n in c.spec.nodes}
    edges = {e.type: e for e in c.spec.edges}

    def node(t: str | None, field_name: str) -> None:
        if t is not None and t not in nodes:
            raise c.error(f"lineage.{field_name} names node type {t!r}, which no node "
                          "rule defines", "lineage", field_name,
                          hint=f"node types: {', '.join(nodes)}")

    def edge(t: str | None, field_name: str, src: str | None, dst: str | None) -> None:
        if t is None:
            return
        rules = [e for e in c.spec.edges if e.type == t]
        if not rules:
            raise c.error(f"lineage.{field_name} names edge type {t!r}, which no edge "
                          "rule defines", "lineage", field_name,
                          hint=f"edge types: {', '.join(edges) or '(none)'}")
        if any((e.from_.type, e.to.type) != (src, dst) for e in rules):
            raise c.error(f"lineage.{field_name}: {t} edges must go from {src} to {dst}",
                          "lineage", field_name)

    def prop(t: str, name: str, field_name: str) -> None:
        rule = nodes[t]
        if name not in rule.key and name not in rule.properties:
            raise c.error(f"lineage.{field_name}: {t} nodes have no property {name!r}",
                          "lineage", field_name,
                          hint="name one of its key columns or properties")

    node(lin.session, "session")
    node(lin.thread, "thread")
    node(lin.agent, "agent")
    prop(lin.session, lin.session_key, "session_key")
    prop(lin.thread, lin.thread_key, "thread_key")
    prop(lin.thread, lin.thread_session, "thread_session")
    for alias in lin.thread_aliases:
        prop(lin.thread, alias, "thread_aliases")
    edge(lin.has_thread, "has_thread", lin.session, lin.thread)
    edge(lin.parent, "parent", lin.thread, lin.thread)
    if (lin.agent is None) != (lin.has_agent is None):
        raise c.error("lineage.agent and lineage.has_agent go together", "lineage",
                      hint="name both, or neither")
    edge(lin.has_agent, "has_agent", lin.thread, lin.agent)
    edge(lin.continues, "continues", lin.session, lin.session)


def lineage_vocabulary(c: LoadedContract) -> LineageVocabulary | None:
    """The contract's lineage vocabulary for the stores, or None if it declares none."""
    lin = c.spec.lineage
    if lin is None:
        return None
    data = lin.model_dump()
    data["thread_aliases"] = tuple(data["thread_aliases"])
    return LineageVocabulary(**data)
