"""``graphkit neo4j-server`` with a real Neo4j: how it ends."""

from __future__ import annotations

from pathlib import Path


def test_sigterm_stops_the_server_and_removes_its_temporary_folder(tmp_path: Path) -> None:
    # Was: SIGTERM ended Python at once: the temporary data folder stayed in /tmp (and
    # once the JVM outlived it). Now it ends as Ctrl-C does: exit 0, nothing left.
    import signal
    import time

    from tests.helpers.cli import spawn

    proc = spawn("neo4j-server", "--port", "0", env={"TMPDIR": str(tmp_path)})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "Neo4j is up: …" once Bolt answers
        assert "Neo4j is up" in line, proc.stderr.read() if proc.stderr else line
        homes = [p for p in tmp_path.iterdir() if p.name.startswith("graphkit-neo4j-")]
        assert len(homes) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=90) == 0
        deadline = time.monotonic() + 30
        while homes[0].exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not homes[0].exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
