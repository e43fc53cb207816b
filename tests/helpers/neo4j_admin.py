"""Neo4j's own offline importer for the tests: ``neo4j-admin`` from the Maven
jars (enrich/neo4j-admin), run with the exact command an export's README gives."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

ADMIN_DIR = REPO / "enrich" / "neo4j-admin"
ADMIN_JAR = ADMIN_DIR / "target" / "neo4j-admin.jar"


def admin_jar() -> Path:
    """The neo4j-admin jar, built with Maven first if missing (fails the test if it cannot be)."""
    if ADMIN_JAR.is_file() and (ADMIN_DIR / "target" / "lib").is_dir():
        return ADMIN_JAR
    mvn = shutil.which("mvn")
    if mvn is None:
        pytest.fail("Maven (mvn) is not on PATH: it builds enrich/neo4j-admin")
    done = subprocess.run([mvn, "-q", "-B", "-f", str(ADMIN_DIR / "pom.xml"), "package"],
                          capture_output=True, text=True, timeout=1200)
    if done.returncode != 0 or not ADMIN_JAR.is_file():
        pytest.fail(f"building enrich/neo4j-admin failed:\n{done.stdout}\n{done.stderr}")
    return ADMIN_JAR


def readme_command(folder: Path) -> list[str]:
    """The import command in the first ```sh block of the folder's README.md."""
    text = (folder / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "README.md has no ```sh block"
    return shlex.split(block.group(1).replace("\\\n", " "))


def run_import(folder: Path, home: Path) -> str:
    """Run the README's command (``neo4j-admin`` being the Maven jar) from ``folder``
    into the Neo4j home ``home``; return its output, failing the test if it fails."""
    command = readme_command(folder)
    assert command[:5] == ["neo4j-admin", "database", "import", "full", "neo4j"], command
    java = shutil.which("java")
    if java is None:
        pytest.fail("java is not on PATH: the importer needs a JDK 17")
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "NEO4J_HOME": str(home), "NEO4J_CONF": str(home / "conf")}
    done = subprocess.run([java, "-Xmx512m", "-jar", str(admin_jar()), *command[1:],
                           "--max-off-heap-memory=512m"],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=900)
    output = done.stdout + done.stderr
    if done.returncode != 0 or "IMPORT DONE" not in output:
        pytest.fail(f"neo4j-admin import failed (exit {done.returncode}):\n{output[-4000:]}")
    return output
