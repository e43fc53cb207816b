"""The kept state of the incremental transcript build (its cache folder beside the
snapshot: the build record, the link groups' partial graphs, the merged tables),
damaged between two builds.
Each rebuild is a snapshot equal to a cold build's, or one line and exit 2 that says what
to do — never a traceback."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import SHAPED

SESSION = "claude-duplicate-uuid/-home-dev-src-bot/dab1dab1-7777-4e9f-a0b1-000000000007.jsonl"
# Compressed buffers start with a frame: partials use LZ4, the merged tables zstd.
FRAMES = (bytes.fromhex("04224d18"), bytes.fromhex("28b52ffd"))


def _append(src: Path, n: int) -> None:
    """One more message in a Claude session (its last entry again, as a new uuid)."""
    path = src / SESSION
    last = json.loads(path.read_text().splitlines()[-1])
    with path.open("a") as fh:
        fh.write(json.dumps({**last, "uuid": f"appended-{n}"}) + "\n")


def _tables(snap: Path) -> dict[str, bytes]:
    return {str(p.relative_to(snap)): p.read_bytes()
            for p in sorted([*snap.glob("nodes/*.parquet"), *snap.glob("edges/*.parquet")])}


def _built(tmp_path: Path) -> tuple[Path, Path]:
    """Sources and a snapshot built from them twice (the second an append, so the cache
    holds partial graphs, a hot group and merged tables)."""
    src = tmp_path / "src"
    shutil.copytree(SHAPED, src)
    snap = tmp_path / "snap"
    for n in range(2):
        if n:
            _append(src, n)
        proc = graphkit("build", src, "--snapshot", snap)
        assert proc.returncode == 0, proc.stderr
    return src, snap


def _cold(src: Path, tmp_path: Path, *, process: bool = False) -> dict[str, bytes]:
    out = tmp_path / "cold"
    proc = graphkit("build", src, "--snapshot", out / "snap", "--cache-dir", out / "cache",
                    process=process)
    assert proc.returncode == 0, proc.stderr
    return _tables(out / "snap")


def _file_for_folder(p: Path) -> None:
    shutil.rmtree(p)
    p.write_text("not a folder\n")


def _folder_for_file(p: Path) -> None:
    p.unlink()
    p.mkdir()


@pytest.mark.slow
@pytest.mark.parametrize(("where", "damage"), [
    ("", _file_for_folder),
    ("graph", _file_for_folder),
    ("graph/graph-merged.arrow", _folder_for_file),
    ("graph/graph-state.json.zst", _folder_for_file),
    ("build-record.json.gz", _folder_for_file),
])
def test_a_cache_entry_of_the_wrong_kind_is_one_line(tmp_path: Path, where: str,
                                                     damage: object) -> None:
    # Was: NotADirectoryError / IsADirectoryError tracebacks when the build wrote its cache.
    src, snap = _built(tmp_path)
    cache = snap.with_name(".snap.cache")
    damage(cache / where)  # type: ignore[operator]
    _append(src, 2)
    line = one_line_error(graphkit("build", src, "--snapshot", snap), str(cache))
    assert "build cache" in line and "--cache-dir" in line
    # Doing what it says: the next build is a cold build's.
    (shutil.rmtree if cache.is_dir() else Path.unlink)(cache)  # type: ignore[operator]
    proc = graphkit("build", src, "--snapshot", snap)
    assert proc.returncode == 0, proc.stderr
    assert _tables(snap) == _cold(src, tmp_path)


@pytest.mark.slow
def test_a_damaged_compressed_table_in_the_kept_graph_is_read_again(tmp_path: Path) -> None:
    # Was: "OSError: LZ4 decompress failed" (pyarrow's ArrowIOError is an OSError, not
    # an ArrowException) from a partial graph whose account still read.
    src, snap = _built(tmp_path)
    graph = snap.with_name(".snap.cache") / "graph"
    damaged = 0
    for f in [*graph.glob("part-*.arrow"), graph / "graph-merged.arrow"]:
        data = bytearray(f.read_bytes())
        at = max(data.find(frame) for frame in FRAMES)
        if at < 0:
            continue  # small buffers are stored uncompressed
        data[at + 6] ^= 0xFF  # in the frame header: "header checksum invalid" or alike
        f.write_bytes(bytes(data))
        damaged += 1
    assert damaged > 2
    _append(src, 2)
    proc = graphkit("build", src, "--snapshot", snap)
    assert proc.returncode == 0, proc.stderr
    assert "unreadable" in proc.stderr
    assert _tables(snap) == _cold(src, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate", "empty", "rewrite"])
def test_a_snapshot_table_damaged_since_is_not_kept(tmp_path: Path, damage: str) -> None:
    # Was: "snapshot kept" (only the manifest's stat was compared), leaving a snapshot
    # every reader refuses for its table's digest, build after build.
    src, snap = _built(tmp_path)
    table = snap / "nodes" / "Thread.parquet"
    data = table.read_bytes()
    table.write_bytes({"truncate": data[: len(data) // 2], "empty": b"",
                       "rewrite": data[:-1] + bytes([data[-1] ^ 1])}[damage])
    proc = graphkit("build", src, "--snapshot", snap)
    assert proc.returncode == 0, proc.stderr
    assert "snapshot kept" not in proc.stdout
    assert _tables(snap) == _cold(src, tmp_path)
    assert graphkit("sessions", "--snapshot", snap).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("splice", ["1", "0"])
def test_a_file_rewritten_in_place_with_its_size_and_mtime_put_back_is_read_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, splice: str) -> None:
    # Was: "snapshot kept" (size, mtime and inode all equal), the old graph served; as
    # `cp -p backup/x.jsonl x.jsonl` over a file of the same size does. Whole builds
    # (GRAPHKIT_SPLICE=0, their per-file index) alike.
    monkeypatch.setenv("GRAPHKIT_SPLICE", splice)
    src, snap = _built(tmp_path)
    path = src / SESSION
    before = path.stat()
    data = path.read_bytes()
    # The first entry's hour, 09 -> 08: the same length, another first_seen.
    old = b'"timestamp":"2026-01-05T09:00:00.000Z"'
    assert old in data
    changed = data.replace(old, old.replace(b"T09", b"T08"), 1)
    assert len(changed) == len(data)
    with path.open("r+b") as fh:  # in place: the same inode
        fh.write(changed)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == \
        (before.st_size, before.st_mtime_ns, before.st_ino)
    proc = graphkit("build", src, "--snapshot", snap)
    assert proc.returncode == 0, proc.stderr
    monkeypatch.delenv("GRAPHKIT_SPLICE")
    assert _tables(snap) == _cold(src, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("splice", ["1", "0"])
def test_a_fifo_or_a_device_among_the_transcripts_is_a_skipped_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, splice: str) -> None:
    # Was: the build hung (opening a FIFO waits for a writer; /dev/zero never ends), in
    # the kind sniffing, the new-file guess and the read alike.
    monkeypatch.setenv("GRAPHKIT_SPLICE", splice)
    src, snap = _built(tmp_path)
    folder = (src / SESSION).parent
    os.mkfifo(folder / "pipe.jsonl")
    os.mkfifo(folder / "agent-pipe.jsonl")
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    proc = graphkit("build", src, "--snapshot", snap, "--json")
    assert proc.returncode == 0, proc.stderr
    skipped = {Path(s["file"]).name: s["reason"]
               for s in json.loads(proc.stdout)["skipped_lines"]}
    for name in ("pipe.jsonl", "agent-pipe.jsonl", "zero.jsonl"):
        assert skipped[name] == "cannot read file: not a regular file"
    monkeypatch.delenv("GRAPHKIT_SPLICE")
    assert _tables(snap) == _cold(src, tmp_path)


def _b64(values: list[int], dtype: str) -> str:
    import base64

    import numpy as np

    return base64.b64encode(np.array(values, dtype=dtype).tobytes()).decode()


@pytest.mark.slow
@pytest.mark.parametrize("edit", [
    lambda s: s.__setitem__("files", "x"),
    lambda s: s.__setitem__("files", None),
    lambda s: s.__setitem__("files", []),
    lambda s: s.__setitem__("files", _b64([10 ** 9], "<i4")),  # beyond the walk
    lambda s: s.__setitem__("groups", _b64([-1], "<i2")),
    lambda s: s.__setitem__("stats", s["stats"][:-8]),  # fewer stats than paths
    lambda s: s.__setitem__("walk", 3),
    lambda s: s.__setitem__("roots", "x"),
    lambda s: s["parts"].__setitem__("x", {}),
    lambda s: s.__setitem__("parts", []),
], ids=["files-text", "files-null", "files-empty-list", "file-beyond-walk",
        "group-negative", "stats-short", "walk-a-number", "roots-text", "part-key-text",
        "parts-a-list"])
def test_a_state_edited_by_hand_is_rebuilt(tmp_path: Path, edit: object) -> None:
    # Was: a kept state still JSON but of another shape (edited by hand)
    # was a ValueError, TypeError, IndexError or AttributeError traceback, every build.
    import msgspec

    from graphkit.builds.incremental.merged import zstd_pack, zstd_unpack

    src, snap = _built(tmp_path)
    path = snap.with_name(".snap.cache") / "graph" / "graph-state.json.zst"
    state = msgspec.json.decode(zstd_unpack(path.read_bytes()))
    edit(state)  # type: ignore[operator]
    path.write_bytes(zstd_pack(msgspec.json.encode(state)))
    _append(src, 2)
    proc = graphkit("build", src, "--snapshot", snap)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "stored graph parts unreadable" in proc.stderr
    assert _tables(snap) == _cold(src, tmp_path)


@pytest.mark.slow
def test_a_state_naming_a_file_that_is_no_transcript_is_not_trusted(tmp_path: Path) -> None:
    # Incremental pass 7: the state keeps the transcript files as positions in the walk,
    # and an append whose walk has the same paths takes them from there (not listed
    # again). A state edited by hand to name another file of the walk (still valid) in
    # the appended session's group must not make that file a transcript: the listing is
    # sealed, and listed again when the seal does not hold.
    import base64

    import msgspec
    import numpy as np

    from graphkit.builds.incremental.merged import zstd_pack, zstd_unpack

    src = tmp_path / "src"
    shutil.copytree(SHAPED, src)
    # A session's lines in a subagents folder under a name that is no agent's: walked,
    # never a transcript (a build would find a whole session more in it).
    journal = (src / SESSION).parent / "x" / "subagents" / "journal.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_text((src / SESSION).read_text().replace("dab1dab1", "0ddba11e"))
    snap = tmp_path / "snap"
    for n in range(2):
        if n:
            _append(src, n)
        assert graphkit("build", src, "--snapshot", snap).returncode == 0
    path = snap.with_name(".snap.cache") / "graph" / "graph-state.json.zst"
    state = msgspec.json.decode(zstd_unpack(path.read_bytes()))
    walk = state["walk"].split("\0")
    files = np.frombuffer(base64.b64decode(state["files"]), "<i4").tolist()
    groups = np.frombuffer(base64.b64decode(state["groups"]), "<i2").tolist()
    session = walk.index(str((src / SESSION).resolve()))
    other = walk.index(str(journal.resolve()))
    assert other not in files
    at = sorted([*files, other])
    groups.insert(at.index(other), groups[files.index(session)])
    state["files"] = base64.b64encode(np.array(at, "<i4").tobytes()).decode()
    state["groups"] = base64.b64encode(np.array(groups, "<i2").tobytes()).decode()
    path.write_bytes(zstd_pack(msgspec.json.encode(state)))
    _append(src, 2)
    proc = graphkit("build", src, "--snapshot", snap)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert _tables(snap) == _cold(src, tmp_path)
    inputs = [i["path"] for i in json.loads((snap / "manifest.json").read_text())["inputs"]]
    assert str(journal.resolve()) not in inputs


@pytest.mark.slow
def test_a_transcript_folder_named_with_bytes_that_are_not_utf8_builds(
        tmp_path: Path) -> None:
    # Was: UnicodeEncodeError traceback, spliced and whole builds alike:
    # msgspec refuses the lone surrogate os.fsdecode makes of the byte (json escaped it)
    # in the partials' accounts, the kept state and the build record.
    src = tmp_path / "src"
    shutil.copytree(SHAPED, src)
    moved = Path(SESSION)
    folder = os.path.join(os.fsencode(src / moved.parent), b"bad\xff")
    os.mkdir(folder)
    os.rename(src / moved, os.path.join(folder, os.fsencode(moved.name)))
    snap = tmp_path / "snap"
    for n in range(2):
        if n:
            path = Path(os.fsdecode(os.path.join(folder, os.fsencode(moved.name))))
            last = json.loads(path.read_text().splitlines()[-1])
            with path.open("a") as fh:
                fh.write(json.dumps({**last, "uuid": "appended-1"}) + "\n")
        # A process of its own: its stderr notes name the file as such a process can.
        proc = graphkit("build", src, "--snapshot", snap, process=True)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert _tables(snap) == _cold(src, tmp_path / str(n), process=True)
