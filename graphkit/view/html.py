"""One self-contained HTML file: the page, its CSS and script inline, the data as JSON.

The page loads nothing: its Content-Security-Policy allows no network at all
and runs only the page's own script and style (by hash), so even markup that
slipped into the page could not run or fetch. The data is embedded as
``<script type="application/json">`` with ``<``, ``>``, ``&`` and U+2028/2029
written as JSON escapes: no transcript string can close the element or be
read as markup, and ``JSON.parse`` gives the exact strings back.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from graphkit._version import __version__
from graphkit.core.files import output_file

_ASSETS = resources.files("graphkit.view") / "assets"
# What JSON text must not contain inside a <script> element, and the escape
# JSON.parse reads back as the same character.
_JSON_ESCAPES: dict[str, str | int | None] = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                               "\u2028": "\\u2028", "\u2029": "\\u2029"}


def embed_json(data: Any) -> str:
    """``data`` as JSON text safe inside a ``<script type="application/json">``.

    >>> print(embed_json({"s": "</script><img src=x>&\u2028"}))
    {"s":"\\u003c/script\\u003e\\u003cimg src=x\\u003e\\u0026\\u2028"}
    >>> json.loads(embed_json({"s": "<b>&</b>"}))["s"]
    '<b>&</b>'
    """
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    # These characters only occur inside JSON strings, where an escape means the same.
    return text.translate(str.maketrans(_JSON_ESCAPES))


@functools.cache
def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() \
        + "'"


@functools.cache
def _page(stem: str) -> tuple[str, dict[str, str]]:
    """The template of page ``stem`` and its fixed values: CSS, script, their CSP."""
    css, js = _asset(f"{stem}.css"), _asset(f"{stem}.js")
    for name, text, end in ((f"{stem}.css", css, "</style"), (f"{stem}.js", js, "</script")):
        # Our own assets are inlined verbatim, so they must not end their element.
        if end in text.lower():
            raise AssertionError(f"{name} contains {end!r}")
    csp = ("default-src 'none'; "
           f"script-src {_sha256(js)}; style-src {_sha256(css)}; img-src data:; "
           "base-uri 'none'; form-action 'none'")
    return _asset(f"{stem}.html"), {"CSP": html.escape(csp), "CSS": css, "JS": js,
                                    "GENERATOR": html.escape(f"graphkit {__version__}")}


def page_html(stem: str, data: dict[str, Any], title: str) -> str:
    """Page ``stem`` (``assets/<stem>.html`` with its ``.css`` and ``.js`` inlined) for
    ``data``, titled ``title``."""
    template, fixed = _page(stem)
    values = {**fixed, "TITLE": html.escape(title), "DATA": embed_json(data)}
    # One pass over the template: inserted text (a session id, the data) is
    # never scanned again, so nothing in it can be taken for a placeholder.
    return re.sub(r"@@([A-Z]+)@@", lambda m: values[m.group(1)], template)


def render_html(data: dict[str, Any]) -> str:
    """The page for ``data`` (from :func:`graphkit.view.data.session_view`)."""
    session = str(data.get("session", {}).get("id", ""))
    return page_html("view", data, f"graphkit view · session {session}")


def write_html(page: str, out: Path, *, sources: Sequence[Path | str] = (),
               private: bool = False) -> None:
    """Write ``page`` to ``out`` atomically (a temporary file renamed into place; a
    symbolic link's target), or through it when it is a pipe or device. ``out`` may not
    be one of ``sources``, a transcript or a snapshot's file; ``private`` (a page that
    shows message content) makes it 0600, as the snapshot it came from is."""
    with output_file(Path(out), public=not private, private=private, sources=sources,
                     what="view") as f:
        f.write(page.encode("utf-8"))
