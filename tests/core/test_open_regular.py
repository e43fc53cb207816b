"""One way to open a file that must be a regular one: the snapshot's
manifest and tables, a contract cache entry, transcripts and a price table all go
through ``core.files.open_regular``, which never blocks on a FIFO and never reads a
device."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest

from graphkit.core.files import open_regular, opened_regular
from tests.helpers.paths import REPO


def test_a_regular_file_is_opened_and_read(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"hello")
    with os.fdopen(open_regular(tmp_path / "a.txt"), "rb") as f:
        assert f.read() == b"hello"
    fd, st = opened_regular(tmp_path / "a.txt")
    os.close(fd)
    assert st.st_size == 5


def test_a_file_is_opened_relative_to_a_folder_descriptor(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_bytes(b"in sub")
    dfd = os.open(tmp_path / "sub", os.O_RDONLY)
    try:
        with os.fdopen(open_regular("b.txt", dir_fd=dfd), "rb") as f:
            assert f.read() == b"in sub"
        with pytest.raises(FileNotFoundError):
            open_regular("missing.txt", dir_fd=dfd)
    finally:
        os.close(dfd)


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")  # no writer: a blocking open would never return
    with pytest.raises(OSError) as caught:
        open_regular(tmp_path / "pipe")
    assert caught.value.errno == errno.EINVAL
    assert caught.value.strerror == "not a regular file"
    assert caught.value.filename == str(tmp_path / "pipe")


def test_a_link_to_a_device_and_a_folder_are_refused(tmp_path: Path) -> None:
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(OSError, match="not a regular file"):
        open_regular(tmp_path / "zero")
    with pytest.raises(IsADirectoryError):
        open_regular(tmp_path)
    dfd = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(IsADirectoryError):
            opened_regular(".", dir_fd=dfd)
    finally:
        os.close(dfd)


def test_no_other_module_opens_files_without_blocking() -> None:
    """The four copies (snapshot swap and verify, contract cache, transcripts) differed
    only in the exception they raised; a fifth would drift the same way."""
    found = [str(p.relative_to(REPO)) for p in sorted((REPO / "graphkit").rglob("*.py"))
             if re.search(r"O_NONBLOCK", p.read_text(encoding="utf-8"))]
    assert found == ["graphkit/core/files.py"]
