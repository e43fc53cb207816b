"""The checked-contract cache: a cached load is the fresh load, without pydantic or YAML."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphkit.contract import cache
from graphkit.contract.loader import available_contracts, find_contract, load_contract
from graphkit.contract.model import Contract as ContractModel
from graphkit.core.errors import ContractError
from tests.helpers.paths import REPO

CASES = """\
contract: cases
version: 2
input:
  session_id: {type: string, required: true}
  agent_id: {type: string, blank_is_null: true}
  n: {type: int}
derive:
  kind:
    case:
      - {when: {not_null: [agent_id], less_than: {n: 2.5}}, then: sub}
      - {when: {in: {session_id: [a, 1]}, equals: {n: 3}}, then: 7}
    else: top
nodes:
  - type: Session
    key: [session_id]
    properties:
      kinds: {count_distinct: kind}
      first_n: {first: n}
edges:
  - type: SELF
    from: {type: Session, key: [session_id]}
    to: {type: Session, key: [session_id]}
    where: {not_equals: {kind: top}}
"""


def _same(a: object, b: object) -> None:
    assert a == b and type(a) is type(b)


@pytest.fixture()
def cache_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "contract-cache"
    monkeypatch.setenv("GRAPHKIT_CONTRACT_CACHE", str(folder))
    return folder


@pytest.mark.parametrize("name", [*available_contracts(), "cases"])
def test_a_cached_load_equals_the_fresh_load(name: str, cache_in: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    if name == "cases":
        (tmp_path / "cases.yaml").write_text(CASES)
        name = str(tmp_path / "cases.yaml")
    monkeypatch.setenv("GRAPHKIT_CONTRACT_CACHE", "0")
    fresh = load_contract(name)
    monkeypatch.setenv("GRAPHKIT_CONTRACT_CACHE", str(cache_in))
    first = load_contract(name)  # fresh, and written
    assert len(list(cache_in.glob("*.json"))) == 1
    cached = load_contract(name)
    for c in (first, cached):
        assert c.spec == fresh.spec
        assert c.derived == fresh.derived
        assert c.lines == fresh.lines
        assert c.path == fresh.path
        assert c.spec.model_dump_json() == fresh.spec.model_dump_json()
    # What the pydantic model makes of the file, field for field and in its JSON.
    model = ContractModel.model_validate(__import__("yaml").safe_load(
        find_contract(name).read_text()))
    assert cached.spec.model_dump() == model.model_dump()
    assert cached.spec.model_dump_json() == model.model_dump_json()
    # With nothing cached the JSON is computed: the same text for these contracts.
    assert cached.spec.model_copy().model_dump_json() == model.model_dump_json()
    for i, rule in enumerate(cached.spec.nodes):
        _same(rule, fresh.spec.nodes[i])


@pytest.mark.slow
def test_a_cached_build_imports_neither_pydantic_nor_yaml(cache_in: Path) -> None:
    code = ("import sys; from graphkit.contract.loader import load_contract; load_contract(); "
            "print(sorted(m for m in ('pydantic', 'yaml', 'graphkit.contract.model') "
            "if m in sys.modules))")
    env = {"GRAPHKIT_CONTRACT_CACHE": str(cache_in), "PYTHONPATH": str(REPO)}
    run = [sys.executable, "-c", code]
    first = subprocess.run(run, capture_output=True, text=True, env=env, check=True)
    second = subprocess.run(run, capture_output=True, text=True, env=env, check=True)
    assert first.stdout.strip() == "['graphkit.contract.model', 'pydantic', 'yaml']"
    assert second.stdout.strip() == "[]"


def test_a_bad_contract_is_not_cached_and_errs_alike(cache_in: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(CASES.replace("less_than: {n: 2.5}", "less_than: {n: many}"))
    errors = []
    for _ in range(2):
        with pytest.raises(ContractError) as exc:
            load_contract(str(bad))
        errors.append(str(exc.value))
    assert errors[0] == errors[1] and "derive.kind" in errors[0]
    assert not cache_in.exists() or not list(cache_in.glob("*.json"))


def _body(entry: Path) -> dict[str, object]:
    """An entry's JSON (after its digest line)."""
    return json.loads(entry.read_bytes().partition(b"\n")[2])


def _put(entry: Path, text: str) -> None:
    """Write ``text`` as the entry, with the digest line it needs to be read at all."""
    body = text.encode()
    entry.write_bytes(cache._digest(entry.stem, body) + b"\n" + body)


def test_a_damaged_or_stale_entry_is_loaded_afresh(cache_in: Path, tmp_path: Path) -> None:
    p = tmp_path / "cases.yaml"
    p.write_text(CASES)
    good = load_contract(str(p))
    (entry,) = cache_in.glob("*.json")
    for damage in ("{not json", json.dumps({"format": cache.FORMAT, "spec": {}}),
                   json.dumps({**_body(entry), "filters": []})):
        _put(entry, damage)
        again = load_contract(str(p))
        assert again.spec == good.spec and again.derived == good.derived
        assert _body(entry)["filters"]  # written again, whole


def _edited(entry: Path, change: object) -> None:
    doc = _body(entry)
    change(doc)  # type: ignore[operator]
    entry.write_bytes(entry.read_bytes().partition(b"\n")[0] + b"\n" + json.dumps(doc).encode())


@pytest.mark.parametrize("damage", [
    # Hand edits that still read as an entry: each was taken as the checked contract
    # (a wrong graph, or a traceback deep in the build).
    lambda e: _edited(e, lambda d: d["spec"].update(version="x")),
    lambda e: _edited(e, lambda d: d["spec"].update(nodes=[])),
    lambda e: _edited(e, lambda d: d["spec"]["nodes"][0].update(key="session_id")),
    lambda e: _edited(e, lambda d: d["spec"]["nodes"][0].update(type=5)),
    # Nested too deep for json: RecursionError.
    lambda e: e.write_text("[" * 100_000 + "]" * 100_000),
    # Another contract's entry under this one's name.
    lambda e: e.write_bytes(e.with_name("other.json").read_bytes()),
    # Not a regular file: the build hung reading it.
    lambda e: (e.unlink(), os.mkfifo(e)),
    lambda e: (e.unlink(), e.symlink_to("/dev/zero")),
    lambda e: (e.unlink(), e.mkdir()),
], ids=["version-text", "no-nodes", "key-text", "type-int", "deep", "foreign", "fifo",
        "dev-zero", "folder"])
@pytest.mark.slow
def test_an_entry_not_written_as_it_is_is_never_taken(damage: object, cache_in: Path,
                                                      tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text(CASES.replace("contract: cases", "contract: other"))
    load_contract(str(other))
    (cache_in / f"{cache.entry_key(other.read_bytes())}.json").rename(cache_in / "other.json")
    p = tmp_path / "cases.yaml"
    p.write_text(CASES)
    good = load_contract(str(p))
    entry = cache_in / f"{cache.entry_key(p.read_bytes())}.json"
    damage(entry)  # type: ignore[operator]
    code = ("import sys; from graphkit.contract.loader import load_contract; "
            "c = load_contract(sys.argv[1]); print(c.spec.model_dump_json())")
    env = {"GRAPHKIT_CONTRACT_CACHE": str(cache_in), "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True,
                         text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == good.spec.model_dump_json()
    if not entry.is_dir():  # written again (a folder in the way stays: nothing is lost)
        assert _body(entry)["spec"] == good.spec.model_dump()


def test_changed_bytes_miss_and_an_unwritable_cache_only_costs_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache.entry_key(b"a") != cache.entry_key(b"b")
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("GRAPHKIT_CONTRACT_CACHE", str(blocker / "sub"))
    assert load_contract().name == "ai-gateway-graph"
    monkeypatch.setenv("GRAPHKIT_CONTRACT_CACHE", "")
    assert cache.cache_dir() is None
    monkeypatch.delenv("GRAPHKIT_CONTRACT_CACHE")
    monkeypatch.setenv("GRAPHKIT_HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / "contracts"


def test_yaml_values_json_cannot_keep_are_not_cached(cache_in: Path, tmp_path: Path) -> None:
    p = tmp_path / "dated.yaml"
    p.write_text(CASES.replace("else: top", "else: 2026-12-01"))
    c = load_contract(str(p))
    assert load_contract(str(p)).spec == c.spec
    assert not cache_in.exists() or not list(cache_in.glob("*.json"))
