"""The README's tour prints what it shows: each ``console`` block's commands are run on
a terminal after the quick start, and their output must be the block's.

When a command's output changes on purpose, write the new output into the README:

    python -m tests.cli.test_readme_tour
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import shlex
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
COLUMNS, LINES = 120, 50
_BLOCK = re.compile(r"```console\n(.*?)```", re.S)
_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def quick_start_build(readme: str) -> list[str]:
    """The quick start's first command less its install step and its last
    command: the build every tour command reads (``graphkit build …``)."""
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    first = re.findall(r"```sh\n(.*?)```", section, re.S)[0].strip()
    steps = [shlex.split(s) for s in first.split(" && ")]
    (build,) = [s for s in steps if s[:2] == ["graphkit", "build"]]
    return build


def on_terminal(argv: list[str], cwd: Path) -> str:
    """What ``argv`` shows on a ``COLUMNS``-wide terminal (stdout and stderr), without
    colours, cursor moves or trailing spaces; the checkout's path left out, so the
    text is the same in every clone."""
    env = dict(_env(cwd), COLUMNS=str(COLUMNS), LINES=str(LINES))
    env.pop("NO_COLOR", None)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                            close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0, (argv, b"".join(chunks)[-2000:])
    text = _ESCAPE.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n")
    text = text.replace(str(REPO) + os.sep, "")
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")


def _env(cwd: Path) -> dict[str, str]:
    # The tour's snapshot index lives in its own folder, never the user's.
    return dict(os.environ, PYTHONPATH=str(REPO), GRAPHKIT_HOME=str(cwd / ".graphkit-home"))


def _graphkit(command: str) -> list[str]:
    argv = shlex.split(command)
    assert argv[0] == "graphkit", command
    return [sys.executable, "-m", "graphkit", *argv[1:]]


def tour(readme: str, cwd: Path) -> str:
    """The README with every ``console`` block's output made again in ``cwd``."""
    def block(found: re.Match[str]) -> str:
        out = []
        for command in (line[2:] for line in found.group(1).splitlines()
                        if line.startswith("$ ")):
            out += [f"$ {command}", on_terminal(_graphkit(command), cwd)]
        return "```console\n" + "\n".join(out) + "\n```"
    return _BLOCK.sub(block, readme)


def _built(where: Path) -> Path:
    (where / "samples").symlink_to(REPO / "samples")
    build = quick_start_build(README.read_text(encoding="utf-8"))
    done = subprocess.run([*_graphkit(shlex.join(build)), "-q"], cwd=where, capture_output=True,
                          text=True, env=_env(where), timeout=300)
    assert done.returncode == 0, done.stderr
    return where


@pytest.mark.slow
def test_the_tour_prints_what_the_readme_shows(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    readme = README.read_text(encoding="utf-8")
    assert len(_BLOCK.findall(readme)) >= 5
    assert tour(readme, _built(tmp_path)) == readme, \
        "README tour output changed: run python -m tests.cli.test_readme_tour"


def test_the_tour_shows_cost_files_and_continuations() -> None:
    """The sample is there to show the whole tool: the tour's output has a cost, a
    file touched, a continuation and a Codex child thread."""
    text = "\n".join(_BLOCK.findall(README.read_text(encoding="utf-8")))
    assert re.search(r"\$\d+\.\d{4}", text)
    assert "/src/handlers.py" in text
    assert "continued by" in text and "(resume)" in text and "(fork)" in text
    assert "child-thread" in text


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        new = tour(README.read_text(encoding="utf-8"), _built(Path(tmp)))
    README.write_text(new, encoding="utf-8")
    print(f"wrote {README}")
