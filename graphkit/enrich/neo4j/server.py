"""Start and stop a throwaway local Neo4j (Community 5.26, embedded, Bolt on loopback).

The server is ``enrich/neo4j-launcher`` (a Maven project) run with ``java -jar``.
It needs only a JDK 17 and Maven Central, not Docker nor a Neo4j install,
which is what the tests, the benchmarks and ``graphkit neo4j-server`` need.

In a source checkout the launcher is built in place (``enrich/neo4j-launcher/
target``). An installed wheel carries the launcher's ``pom.xml`` and Java
source (``graphkit/_launcher/neo4j-launcher``) and builds it on first use into
``$XDG_CACHE_HOME/graphkit`` (``~/.cache/graphkit``), saying so: the build
downloads Neo4j's jars (~125 MB) from Maven Central once.

Without a password the server has no authentication: anyone who can reach its
port (loopback by default) can read and change the database.

Usage (needs Java, so not a doctest)::

    with start_local_neo4j() as server:
        with Neo4jStore(Neo4jConfig(uri=server.uri, password=server.password)) as store:
            store.load(graph)
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from graphkit.core.errors import StoreError

# A source checkout has the launcher project beside the package; a wheel has
# a copy of its pom.xml and src/ inside the package (pyproject force-include).
CHECKOUT_LAUNCHER = Path(__file__).resolve().parents[3] / "enrich" / "neo4j-launcher"
PACKAGED_LAUNCHER = Path(__file__).resolve().parents[2] / "_launcher" / "neo4j-launcher"
LAUNCHER_DIR = (CHECKOUT_LAUNCHER if (CHECKOUT_LAUNCHER / "pom.xml").is_file()
                else PACKAGED_LAUNCHER)
JAR_NAME = "neo4j-launcher.jar"
READY_PREFIX = "READY "
# The launcher reads the password from this variable so it never shows in `ps`.
PASSWORD_ENV = "GRAPHKIT_NEO4J_LAUNCHER_PASSWORD"


class Neo4jLaunchError(StoreError):
    """The launcher did not come up; ``output`` holds what it printed."""

    def __init__(self, message: str, output: str = "", hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.output = output


@dataclass
class LocalNeo4j:
    """A running launcher process. Use as a context manager, or call :meth:`stop`."""

    uri: str
    home: Path
    process: subprocess.Popen[bytes]
    password: str | None = field(repr=False)
    user: str = "neo4j"
    remove_home: bool = False

    @property
    def log_path(self) -> Path:
        """The launcher's own stdout/stderr (Neo4j's logs are under ``home/logs``)."""
        return self.home / "launcher.out"

    @property
    def auth(self) -> tuple[str, str] | None:
        """What ``neo4j.GraphDatabase.driver(auth=...)`` needs."""
        return (self.user, self.password) if self.password is not None else None

    def output(self) -> str:
        """Everything the launcher printed so far."""
        return _read(self.log_path)

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM, wait for the clean shutdown (a checkpoint), SIGKILL if it hangs."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        _close_stdin(self.process)
        if self.remove_home:
            shutil.rmtree(self.home, ignore_errors=True)

    def kill(self) -> None:
        """SIGKILL, no shutdown: the next start on ``home`` must recover. For fault tests."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        _close_stdin(self.process)

    def __enter__(self) -> LocalNeo4j:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _say_on_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cache_dir() -> Path:
    """Where a wheel's launcher is built: ``$XDG_CACHE_HOME/graphkit`` or ``~/.cache/graphkit``."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "graphkit"


def launcher_jar(
    launcher_dir: Path = LAUNCHER_DIR,
    *,
    build: bool = True,
    say: Callable[[str], None] = _say_on_stderr,
) -> Path:
    """The launcher jar, built with Maven first if it (or its ``lib/``) is missing.

    A checkout's launcher is built in place; the wheel's read-only copy is
    built in :func:`cache_dir`, in a folder named by a hash of its sources (a
    new graphkit with a changed launcher builds anew).
    """
    pom = launcher_dir / "pom.xml"
    if not pom.is_file():
        raise StoreError(
            f"the Neo4j launcher is not at {launcher_dir}",
            hint="reinstall graphkit (its wheel carries the launcher) or set NEO4J_URI",
        )
    project = launcher_dir
    if launcher_dir.resolve() != CHECKOUT_LAUNCHER.resolve():
        project = cache_dir() / f"neo4j-launcher-{_source_hash(launcher_dir)}"
    jar = project / "target" / JAR_NAME
    if jar.is_file() and (project / "target" / "lib").is_dir():
        return jar
    if not build:
        raise StoreError(f"{jar} is missing", hint=f"run: mvn -q -f {project / 'pom.xml'} package")
    mvn = shutil.which("mvn")
    if mvn is None:
        raise StoreError("Maven (mvn) is not on PATH, and the Neo4j launcher must be built once",
                         hint="install Maven 3.8+ and a JDK 17")
    if project != launcher_dir:
        _copy_sources(launcher_dir, project)
    say(f"building the Neo4j launcher in {project} with Maven (first use only; it downloads "
        "Neo4j's jars, ~125 MB, from Maven Central)")
    with _build_lock(project):
        if not jar.is_file():  # another process may have built it while we waited
            done = subprocess.run([mvn, "-q", "-B", "-f", str(project / "pom.xml"), "package"],
                                  capture_output=True, text=True)
            if done.returncode != 0 or not jar.is_file():
                raise Neo4jLaunchError(
                    f"building the Neo4j launcher failed (mvn exit {done.returncode})",
                    output=done.stdout + done.stderr,
                    hint=f"run: mvn -f {project / 'pom.xml'} package",
                )
    return jar


def _source_hash(launcher_dir: Path) -> str:
    h = hashlib.sha256()
    for p in sorted([launcher_dir / "pom.xml", *(launcher_dir / "src").rglob("*")]):
        if p.is_file():
            h.update(p.relative_to(launcher_dir).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


def _copy_sources(source: Path, project: Path) -> None:
    project.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / "pom.xml", project / "pom.xml")
    shutil.copytree(source / "src", project / "src", dirs_exist_ok=True)


@contextmanager
def _build_lock(project: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``project/.build.lock``: one Maven build at a time."""
    fd = os.open(project / ".build.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with suppress(ImportError):
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def start_local_neo4j(
    home: Path | str | None = None,
    *,
    password: str | None = None,
    auth: bool = True,
    host: str = "127.0.0.1",
    port: int = 0,
    heap: str = "1g",
    pagecache: str = "256m",
    timeout: float = 180.0,
    launcher_dir: str | Path = LAUNCHER_DIR,
    say: Callable[[str], None] = _say_on_stderr,
    jvm_options: Sequence[str] = (),
) -> LocalNeo4j:
    """Start a local Neo4j 5 server (graphkit's Java launcher) and return it once Bolt
    answers a query (``graphkit neo4j-server``).

    The launcher is built with Maven the first time (its jar is kept). The server
    stops when this process ends (it watches its stdin), at :meth:`LocalNeo4j.stop`,
    or at the end of a ``with`` block.

    Parameters
    ----------
    home : str or Path, optional
        The data folder: reuse one to restart on the same data (default: a new
        temporary folder, removed on stop).
    password : str, optional
        The ``neo4j`` user's password (default with ``auth``: a random one, in
        ``.password``).
    auth : bool
        ``False`` turns authentication off.
    host : str
        The address Bolt listens on.
    port : int
        Bolt's port; 0 lets the server pick a free one (see ``.uri``).
    heap, pagecache : str
        JVM heap and Neo4j page cache sizes (``1g``, ``256m``).
    timeout : float
        Seconds to wait for Bolt to answer.
    launcher_dir : str or Path
        The launcher's Maven project (default: the one shipped with graphkit).
    say : callable
        Hears progress lines (default: standard error).
    jvm_options : sequence of str
        Passed to ``java`` before ``-jar`` (GC or JIT flags for a benchmark).

    Returns
    -------
    LocalNeo4j
        The running server: ``uri``, ``user``, ``password``, ``auth``, ``stop()``.

    Raises
    ------
    StoreError
        ``java`` is not on ``PATH``, ``port`` is already in use (said at once, with
        how to choose another), the launcher cannot be built, or the server does not
        start in time (``Neo4jLaunchError``, with the end of its log).

    Examples
    --------
    A port another program holds is refused at once, before any JVM starts:

    >>> import socket
    >>> with socket.socket() as taken:
    ...     taken.bind(("127.0.0.1", 0))
    ...     taken.listen()
    ...     try:
    ...         start_local_neo4j(port=taken.getsockname()[1])
    ...     except StoreError as exc:
    ...         print("already in use" in str(exc) or "java is not on PATH" in str(exc))
    True

    A server needs Java 17 (and Maven, the first time), so this one is not run here:

    >>> with start_local_neo4j() as server:  # doctest: +SKIP
    ...     print(server.uri)
    bolt://127.0.0.1:...
    """
    java = shutil.which("java")
    if java is None:
        raise StoreError("java is not on PATH", hint="install a JDK 17")
    check_port_free(host, port)  # at once: Neo4j said so only after ~30 s, in its logs
    jar = launcher_jar(Path(launcher_dir), say=say)
    remove_home = home is None
    home_path = Path(tempfile.mkdtemp(prefix="graphkit-neo4j-") if home is None else home)
    home_path.mkdir(parents=True, exist_ok=True)
    if not auth:
        password = None
    elif password is None:
        password = secrets.token_urlsafe(16)

    env = dict(os.environ)
    cmd = [
        java,
        f"-Xms{heap}",  # Neo4j warns unless initial == max heap
        f"-Xmx{heap}",
        # G1 unless jvm_options choose another collector (two are refused by java).
        *([] if any(_selects_gc(o) for o in jvm_options) else ["-XX:+UseG1GC"]),
        *jvm_options,
        "-jar",
        str(jar),
        "--home",
        str(home_path),
        "--host",
        host,
        "--port",
        str(port),
        "--pagecache",
        pagecache,
        # Our stdin is a pipe: if this Python process dies, the JVM sees EOF and stops.
        "--watch-stdin",
    ]
    if password is not None:
        env[PASSWORD_ENV] = password
        cmd += ["--password-env", PASSWORD_ENV]
    log_path = home_path / "launcher.out"
    # launcher.out is appended to across restarts on the same home; only what
    # this run prints (after `offset`) may count as its READY line.
    offset = log_path.stat().st_size if log_path.exists() else 0
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, env=env
        )
    server = LocalNeo4j(
        uri="", home=home_path, process=process, password=password, remove_home=remove_home
    )
    deadline = time.monotonic() + timeout
    try:
        server.uri = _wait_ready(server, offset, deadline)
        _wait_bolt(server, deadline)
    except BaseException as exc:
        server.kill()
        if remove_home:
            # The temporary home goes, with the logs the error pointed at: what they say
            # is kept in one file the error names instead.
            kept = _keep_logs(home_path)
            shutil.rmtree(home_path, ignore_errors=True)
            if isinstance(exc, Neo4jLaunchError):
                exc.hint = f"see {kept}" if kept is not None else None
        raise
    return server


def check_port_free(host: str, port: int) -> None:
    """Refuse a Bolt ``port`` something already listens on at ``host`` (0: any free one).

    >>> import socket
    >>> with socket.socket() as s:
    ...     s.bind(("127.0.0.1", 0)); s.listen()
    ...     check_port_free("127.0.0.1", s.getsockname()[1])
    Traceback (most recent call last):
    ...
    graphkit.core.errors.StoreError: port ... on 127.0.0.1 is already in use ...
    """
    if port == 0:
        return
    import errno
    import socket

    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.bind((host, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise StoreError(f"port {port} on {host} is already in use (another Neo4j or "
                             "program listens there)",
                             hint="stop it, or choose another port: --port N, or --port 0 "
                                  "for a free one") from None
        if exc.errno == errno.EACCES:
            raise StoreError(f"port {port} on {host} may not be used by this user (ports "
                             "below 1024 need privileges)",
                             hint="choose a port above 1024, or --port 0 for a free one"
                             ) from None
        raise StoreError(f"cannot use port {port} on {host}: {exc.strerror}",
                         hint="choose another port, or --port 0 for a free one") from None


def _keep_logs(home: Path) -> Path | None:
    """The launcher's output and Neo4j's debug log of a failed start in a temporary home,
    copied into one file outside it (which the error then names); None if none exist."""
    parts = [(name, home / name) for name in ("launcher.out", "logs/debug.log",
                                              "logs/neo4j.log")]
    found = [(name, path) for name, path in parts if path.is_file()]
    if not found:
        return None
    fd, kept = tempfile.mkstemp(prefix="graphkit-neo4j-failed-", suffix=".log")
    with os.fdopen(fd, "wb") as out:
        for name, path in found:
            out.write(f"==== {name} ====\n".encode())
            out.write(_read_bytes(path)[-(1 << 20):])  # the last MiB of each
            out.write(b"\n")
    return Path(kept)


def _selects_gc(option: str) -> bool:
    """True for a ``-XX:+Use…GC`` flag, e.g. ``-XX:+UseParallelGC``."""
    return option.startswith("-XX:+Use") and option.endswith("GC")


def _wait_ready(server: LocalNeo4j, offset: int, deadline: float) -> str:
    """The ``bolt://`` URI from the READY line this run of the launcher printed."""
    while time.monotonic() < deadline:
        text = _read_bytes(server.log_path)[offset:].decode(errors="replace")
        for line in text.splitlines():
            if line.startswith(READY_PREFIX):
                return line[len(READY_PREFIX) :].strip()
        code = server.process.poll()
        if code is not None:
            raise Neo4jLaunchError(
                f"the Neo4j launcher exited with code {code} before Bolt was ready",
                output=_read(server.log_path),
                hint=f"see {server.log_path} and {server.home / 'logs' / 'debug.log'}",
            )
        time.sleep(0.1)
    raise Neo4jLaunchError(
        "the Neo4j launcher did not print READY in time",
        output=_read(server.log_path),
        hint=f"see {server.home / 'logs' / 'debug.log'}",
    )


def _wait_bolt(server: LocalNeo4j, deadline: float) -> None:
    """Run ``RETURN 1`` through the official driver: READY means listening, this means serving."""
    from graphkit.enrich.neo4j.config import driver_module

    driver = driver_module()
    from neo4j.exceptions import Neo4jError, ServiceUnavailable

    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with driver.GraphDatabase.driver(server.uri, auth=server.auth) as d:
                d.execute_query("RETURN 1")
            return
        except (ServiceUnavailable, Neo4jError, OSError) as exc:
            last = exc
            time.sleep(0.2)
    raise Neo4jLaunchError(
        f"Bolt at {server.uri} did not answer: {type(last).__name__}",
        output=_read(server.log_path),
    )


def _read(path: Path) -> str:
    return _read_bytes(path).decode(errors="replace")


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _close_stdin(process: subprocess.Popen[bytes]) -> None:
    if process.stdin is not None and not process.stdin.closed:
        process.stdin.close()
