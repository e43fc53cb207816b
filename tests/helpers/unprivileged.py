"""Run the ``graphkit`` command as an unprivileged user, so that permission bits hold.

Root reads and writes any file whatever its mode, so a test of an unreadable file must
run the command as someone else: uid/gid 65534 (``nobody``). That user must be able to
run the interpreter. Where it cannot (here Python lives under ``/root``, mode 0700), the
command runs in a mount namespace of its own in which that one folder is replaced by a
world-traversable tmpfs holding only the interpreter's tree (bound back in): nothing
changes outside the process. Only a user who is not root and cannot change user skips.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

NOBODY = 65534


def _blocking(path: Path) -> tuple[Path, Path] | None:
    """The first folder above ``path`` that others cannot traverse, with its child on the
    way to ``path``; None when every folder on the way lets them through."""
    parts = path.resolve().parts
    for i in range(1, len(parts) - 1):
        folder = Path(*parts[:i + 1])
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return folder, Path(*parts[:i + 2])
    return None


def _blocked() -> tuple[Path, Path] | None:
    """What blocks the interpreter: its own prefix, or, in a virtual environment, the
    prefix of the Python it was made from (its ``bin/python`` links there)."""
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        found = _blocking(Path(prefix))
        if found is not None:
            return found
    return None


def _env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO),
            "HOME": str(home), "GRAPHKIT_HOME": str(home / "graphkit-home"),
            "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}


@functools.cache
def _how() -> str:
    """``direct`` (nobody can run the interpreter), ``namespace`` (it can in a mount
    namespace hiding the folder that blocks it), or why neither works."""
    if os.geteuid() != 0:
        return "not root and cannot setuid: permission tests need to run as another user"
    probe = [sys.executable, "-c", "import pyarrow, graphkit"]
    home = Path(tempfile.mkdtemp(prefix="graphkit-nobody-"))
    try:
        home.chmod(0o777)  # nobody's home and working folder
        try:
            done = subprocess.run(probe, user=NOBODY, group=NOBODY, extra_groups=[],
                                  env=_env(home), cwd=home, capture_output=True,
                                  timeout=120, check=False)
            if done.returncode == 0:
                return "direct"
        except PermissionError:  # the exec itself: the interpreter is out of reach
            pass
        if _blocked() is None or not (shutil.which("unshare")
                                                       and shutil.which("setpriv")):
            return f"uid {NOBODY} cannot run {sys.executable}, and no mount namespace helps"
        done = subprocess.run(_namespaced(probe, home), env=_env(home), cwd=home,
                              capture_output=True, timeout=120, check=False)
        if done.returncode == 0:
            return "namespace"
        return f"uid {NOBODY} cannot run {sys.executable} even in a mount namespace: " \
               f"{done.stderr[-300:]!r}"
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _namespaced(argv: list[str], scratch: Path) -> list[str]:
    """``argv`` run as nobody in a private mount namespace where the folder blocking the
    interpreter (e.g. ``/root``) is a tmpfs of mode 0755 holding only the interpreter's
    tree."""
    found = _blocked()
    assert found is not None
    folder, child = found
    keep = Path(tempfile.mkdtemp(prefix="graphkit-keep-", dir=scratch))
    script = ('set -e; mount --bind "$1" "$2"; mount -t tmpfs -o mode=0755 graphkit "$3"; '
              'mkdir -p "$4"; mount --bind "$2" "$4"; shift 4; '
              f'exec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups -- "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
            str(child), str(keep), str(folder), str(child), *argv]


def skip_unless_possible() -> None:
    """Skip the calling test when no command can run as another user here."""
    how = _how()
    if how not in ("direct", "namespace"):
        pytest.skip(how)


def world_dir(prefix: str = "graphkit-perm-") -> Path:
    """A new folder in the system's temp folder that nobody can use (pytest's own
    ``tmp_path`` lies under a folder of mode 0700)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o777)
    return path


def graphkit_as_nobody(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m graphkit ARGS`` run as uid/gid 65534 with ``cwd`` as its home."""
    skip_unless_possible()
    argv = [sys.executable, "-m", "graphkit", *map(str, args)]
    env = _env(cwd)
    if _how() == "direct":
        return subprocess.run(argv, user=NOBODY, group=NOBODY, extra_groups=[], env=env,
                              cwd=cwd, capture_output=True, text=True, errors="replace",
                              timeout=300, check=False)
    scratch = Path(tempfile.mkdtemp(prefix="graphkit-ns-"))
    try:
        return subprocess.run(_namespaced(argv, scratch), env=env, cwd=cwd,
                              capture_output=True, text=True, errors="replace", timeout=300,
                              check=False)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # the mount point, empty out here
