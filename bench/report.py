"""``bench/README.md``: the hand-written guide, and each benchmark's current tables
between markers, rewritten by the benchmark that measured them.

    python -m bench.report     # every table again from bench/*.json (no measuring)

A section sits between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``; one
that is not there yet is added at the end. Headings move so the section's top one is a
``##`` heading of the README.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"


def write_section(name: str, text: str, out: Path = HERE) -> Path:
    """Put ``text`` as section ``name`` of ``out/README.md``; return the file.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "README.md").write_text("# Bench\\n")
    >>> _ = write_section("x", "# Results\\n\\n| a |\\n", folder)
    >>> _ = write_section("x", "# Results\\n\\n| b |\\n", folder)
    >>> print((folder / "README.md").read_text())
    # Bench
    <BLANKLINE>
    <!-- bench:x -->
    ## Results
    <BLANKLINE>
    | b |
    <!-- /bench:x -->
    <BLANKLINE>
    """
    md = out / "README.md"
    begin, end = _markers(name)
    levels = [len(h) for h in re.findall(r"(?m)^(#{1,6}) ", text)]
    shift = 2 - min(levels) if levels else 0  # the section's top heading becomes ##
    body = re.sub(r"(?m)^(#{1,6}) ", lambda m: "#" * (len(m.group(1)) + shift) + " ",
                  text.strip("\n"))
    block = f"{begin}\n{body}\n{end}"
    current = md.read_text(encoding="utf-8") if md.exists() else "# Benchmarks\n"
    if begin in current and end in current:
        head, rest = current.split(begin, 1)
        current = head + block + rest.split(end, 1)[1]
    else:
        current = current.rstrip("\n") + "\n\n" + block + "\n"
    md.write_text(current, encoding="utf-8")
    return md


def main() -> None:
    """Every section again from the JSON files the benchmarks saved."""
    from bench.__main__ import judge, keep_standalone_runs, write_markdown

    def saved(name: str) -> dict | None:
        path = HERE / name
        return json.loads(path.read_text()) if path.exists() else None

    if (results := saved("results.json")) is not None:
        # As `python -m bench --report-only`: the targets judged again by today's rules.
        metrics = dict(results.get("metrics", {}))
        keep_standalone_runs(results, metrics, [])
        results["targets"] = judge(metrics)
        write_markdown(results, HERE)
    if (incremental := saved("incremental.json")) is not None:
        from bench.incremental import markdown as incremental_markdown

        write_section("incremental", incremental_markdown(incremental))
    if (ccusage := saved("ccusage.json")) is not None:
        from bench.ccusage import markdown as ccusage_markdown

        write_section("ccusage", "\n".join(ccusage_markdown(ccusage)))
    if (scale := saved("scale.json")) is not None:
        from bench.scale import markdown as scale_markdown

        write_section("scale", "# graphkit at scale\n\n" + scale_markdown(scale))
    if (spark := saved("spark_load.json")) is not None:
        from bench.spark_load import markdown as spark_markdown

        write_section("spark-load", spark_markdown(spark))
    if (shapes := saved("shapes.json")) is not None:
        from bench.shapes import markdown as shapes_markdown

        write_section("shapes", shapes_markdown(shapes))
    print(f"wrote {HERE / 'README.md'}")


if __name__ == "__main__":
    main()
