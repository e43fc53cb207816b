"""Where contracts are found: the one search path, for the loader and the build key.

Standard library only: a rebuild asks which files its contract could come from before it
knows whether anything changed, and must not pay for pyarrow or the schema to ask.
"""

from __future__ import annotations

from pathlib import Path

# The contract a build uses when none is named (`graphkit build`'s --contract default).
DEFAULT_CONTRACT = "ai-gateway-graph"


def contract_dirs() -> list[Path]:
    """Folders searched for contracts by name: the wheel's copy, then the repo's."""
    here = Path(__file__).resolve().parent.parent
    return [here / "_contracts", here.parent / "contracts"]


def available_contracts() -> list[str]:
    """Names of the contracts shipped with graphkit.

    >>> "ai-gateway-graph" in available_contracts()
    True
    """
    names: set[str] = set()
    for d in contract_dirs():
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


def is_contract_path(name_or_path: str) -> bool:
    """Whether ``name_or_path`` names a file (a YAML path, or anything that exists)
    rather than a shipped contract's name."""
    p = Path(name_or_path)
    return p.suffix in (".yaml", ".yml") or p.exists()


def contract_candidates(name_or_path: str) -> list[Path]:
    """The files that could hold the contract ``name_or_path``, in search order: the first
    that is a file is the contract, so a file appearing earlier in the list changes which
    one (the build key watches them all).

    >>> [p.name for p in contract_candidates("ai-gateway-graph")][1:]
    ['ai-gateway-graph.yaml', 'ai-gateway-graph.yaml']
    """
    p = Path(name_or_path)
    if is_contract_path(name_or_path):
        return [p]
    return [p, *(d / f"{name_or_path}.yaml" for d in contract_dirs())]
