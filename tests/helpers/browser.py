"""A real headless Chromium for the view tests: Debian's ``chromium``, installed
here when it is missing and we may (root with apt-get). Never skipped: without
a browser these tests fail and say how to get one. The fixtures ``chromium`` and
``browser`` are offered to every test by tests/conftest.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest


def _apt_install() -> str:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    log = ""
    for cmd in (["apt-get", "install", "-y", "--no-install-recommends", "chromium"],
                ["apt-get", "update"],
                ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
        log += f"$ {' '.join(cmd)}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        if cmd[1] == "install" and done.returncode == 0 and shutil.which("chromium"):
            break
    return log


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of a headless-capable Chromium."""
    exe = shutil.which("chromium")
    log = ""
    if exe is None and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        log = _apt_install()
        exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("the view tests need Debian's chromium in a real headless browser: "
                    "run `apt-get install -y chromium` as root\n" + log)
    return exe


class Browser:
    """Runs pages in headless Chromium and hands back what it rendered."""

    def __init__(self, exe: str, profile: Path) -> None:
        self.exe = exe
        self.profile = profile

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [self.exe, "--headless", "--disable-gpu", "--no-first-run",
               "--no-default-browser-check", "--disable-extensions",
               # No calls home: the machine may reach nothing but loopback.
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync",
               f"--user-data-dir={self.profile}",
               # Root cannot use Chromium's sandbox; these are our own test pages.
               *(["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
               "--virtual-time-budget=5000", *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        return done

    def dump_dom(self, page: Path, fragment: str = "") -> str:
        """The DOM after the page's scripts ran, serialised."""
        return self._run("--dump-dom", page.resolve().as_uri() + fragment).stdout

    def screenshot(self, page: Path, out: Path, fragment: str = "",
                   size: str = "1400,600") -> Path:
        """A PNG of the rendered page."""
        self._run("--hide-scrollbars", f"--window-size={size}", f"--screenshot={out}",
                  page.resolve().as_uri() + fragment)
        return out


@pytest.fixture(scope="session")
def browser(chromium: str) -> Iterator[Browser]:
    with tempfile.TemporaryDirectory(prefix="graphkit-chromium-") as profile:
        yield Browser(chromium, Path(profile))


class Dom(HTMLParser):
    """The elements (tag and attributes) and text of a serialised DOM."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []
        self._skip = 0
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:  # text people see, not the page's own script and data
            self.texts.append(data)

    def text(self) -> str:
        return "".join(self.texts)

    def attr_values(self, name: str) -> list[str]:
        return [a[name] or "" for _, a in self.elements if name in a]
