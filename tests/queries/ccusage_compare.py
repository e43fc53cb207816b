"""Compare ``graphkit usage`` with ccusage on the same transcripts (run by hand:
it needs ``npx`` and the npm registry, so it is no test).

    python -m tests.queries.ccusage_compare [--keep DIR]

Transcripts: the generated ones of :mod:`tests.helpers.generated_transcripts`
(known usage), and the HypAware fixture's source transcripts. ccusage 20.0.24
(``npx ccusage@20.0.24 claude|codex session --json --offline``; 20.0.26 ships
no Linux x64 binary) reads them through ``CLAUDE_CONFIG_DIR`` / ``CODEX_HOME``
pointing at a copy. Printed per session: both tools' four token counts and
cost, and the truth where the generator knows it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from graphkit.builds.run import build
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.queries.prices import load_prices, session_cost
from graphkit.queries.usage import Tokens, require_sessions, session_usage
from tests.helpers.generated_transcripts import generate
from tests.helpers.paths import FIXTURES

CCUSAGE = "ccusage@20.0.24"
HOME_FIXTURE = FIXTURES / "hypaware-cache" / "home"
_CC = {"inputTokens": "input_tokens", "outputTokens": "output_tokens",
       "cacheCreationTokens": "cache_creation_input_tokens",
       "cacheReadTokens": "cache_read_input_tokens"}


def ccusage(kind: str, env: dict[str, str]) -> list[dict[str, Any]]:
    out = subprocess.run(["npx", "-y", CCUSAGE, kind, "session", "--json", "--offline"],
                         env={**os.environ, **env}, capture_output=True, text=True,
                         check=True, timeout=600)
    doc = json.loads(out.stdout)
    return list(doc.get("sessions") or doc.get("session") or [])


def graphkit(paths: list[Path]) -> dict[str, tuple[Tokens, float | None, float]]:
    store = NetworkXStore()
    store.load(build(paths, fingerprints=False).graph)
    prices = load_prices()
    out = {}
    for u in session_usage(store, require_sessions(store, [])):
        c = session_cost(u, prices)
        out[u.session_id] = (u.total, c.known, c.usd)
    return out


def _row(name: str, t: dict[str, int], cost: Any) -> str:
    nums = " ".join(f"{t.get(k, 0):>9}" for k in _CC.values())
    return f"  {name:<9} {nums}  {cost}"


def compare(label: str, ours: dict[str, tuple[Tokens, float | None, float]],
            theirs: list[dict[str, Any]], truth: dict[str, dict[str, int]] | None) -> None:
    print(f"\n== {label}: {len(ours)} graphkit sessions, {len(theirs)} ccusage sessions")
    print(f"  {'':<9} {'input':>9} {'output':>9} {'c.write':>9} {'c.read':>9}  cost USD")
    by_id = {s.get("sessionId") or s.get("session_id"): s for s in theirs}
    for sid in sorted(set(ours) | set(by_id)):
        print(sid)
        if sid in ours:
            tok, known, usd = ours[sid]
            print(_row("graphkit", tok.to_json(), known if known is not None
                       else f"unpriced (+{usd:.6f} priced)"))
        if sid in by_id:
            s = by_id[sid]
            print(_row("ccusage", {v: int(s.get(k, 0)) for k, v in _CC.items()},
                       round(float(s.get("totalCost", s.get("costUSD", 0))), 6)))
        if truth and sid in truth:
            print(_row("truth", truth[sid], ""))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", type=Path, help="write the transcripts here and keep them")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp())
    truth = generate(root / "gen")
    per_session: dict[str, dict[str, int]] = {}
    for (sid, _), t in truth.own.items():
        acc = per_session.setdefault(sid, dict.fromkeys(_CC.values(), 0))
        for k in acc:
            acc[k] += t.get(k, 0)
    # ccusage reads <CLAUDE_CONFIG_DIR>/projects and <CODEX_HOME>/sessions.
    shutil.copytree(root / "gen" / "claude", root / "claude-config" / "projects")
    shutil.copytree(root / "gen" / "codex", root / "codex-home" / "sessions")
    compare("generated Claude transcripts", graphkit([root / "gen" / "claude"]),
            ccusage("claude", {"CLAUDE_CONFIG_DIR": str(root / "claude-config")}),
            per_session)
    compare("generated Codex rollouts", graphkit([root / "gen" / "codex"]),
            ccusage("codex", {"CODEX_HOME": str(root / "codex-home")}), per_session)
    compare("HypAware fixture transcripts (Claude)",
            graphkit([HOME_FIXTURE / ".claude" / "projects"]),
            ccusage("claude", {"CLAUDE_CONFIG_DIR": str(HOME_FIXTURE / ".claude")}), None)
    compare("HypAware fixture transcripts (Codex)",
            graphkit([HOME_FIXTURE / ".codex" / "sessions"]),
            ccusage("codex", {"CODEX_HOME": str(HOME_FIXTURE / ".codex")}), None)
    if args.keep is None:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
