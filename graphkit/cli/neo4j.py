"""``graphkit load`` and ``graphkit neo4j-server``: the Neo4j side of the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

import graphkit
from graphkit.cli.app import cli
from graphkit.cli.errors import UserError
from graphkit.cli.options import PATH, password_option, quiet_option
from graphkit.cli.render import echo_json, err, progress
from graphkit.cli.stores import password


@cli.command()
@click.argument("snapshot_dir", type=PATH)
@click.option("--if-exists", type=click.Choice(["merge", "replace", "fail"]), default="merge",
              show_default=True,
              help="merge updates what is there, replace deletes the graph's node types "
                   "first, fail refuses if any exist.")
@click.option("--batch-size", type=click.IntRange(min=1), help="Rows per UNWIND batch.")
@click.option("--workers", type=click.IntRange(min=1),
              help="Sessions writing at once (default 2); batches that would lock the same "
                   "nodes never run at the same time.")
@click.option("--engine", type=click.Choice(["driver", "spark"]), default="driver",
              show_default=True, help="spark: Spark's executors write, through the Neo4j "
                                      "Connector for Apache Spark (agent-graphkit[spark]).")
@click.option("--spark-master", help="Spark master URL for --engine spark (default: the "
                                     "spark-submit session, else local[*]).")
@click.option("--lock-wait", type=click.FloatRange(min=0), metavar="SECONDS",
              envvar="GRAPHKIT_LOAD_LOCK_WAIT", show_envvar=True,
              help="How long to wait while another graphkit load holds the database's "
                   "load lock before giving up, naming it (default 600; 0: not at all; "
                   "inf: for ever).")
@password_option
@click.option("--json", "as_json", is_flag=True, help="Print the load report as JSON.")
@quiet_option
def load(snapshot_dir: Path, if_exists: Any, batch_size: int | None, workers: int | None,
         engine: str, spark_master: str | None, lock_wait: float | None, ask_password: bool,
         as_json: bool) -> None:
    """Load a snapshot into the Neo4j server named by NEO4J_URI.

    Into a database holding none of the graph's node labels, nodes and
    relationships are created; otherwise merged (a rerun changes nothing).
    NEO4J_URI may be a neo4j:// routing URI of a cluster (writes go to the leader).

    Example: NEO4J_URI=bolt://127.0.0.1:7687 graphkit load out/graph --if-exists replace

    With --engine spark, Spark's executors write (--workers: writers at once,
    default Spark's parallelism); see docs/scale.md.

    One load at a time: a load holds the database's load lock, and another waits for
    it (saying on a terminal who holds it) at most --lock-wait seconds. A load that
    does not finish leaves the database marked incomplete (reads say so) until it
    is run again.
    """
    secret = password(ask_password)  # the prompt comes before the progress display
    with progress() as shown:
        report = graphkit.load_snapshot(snapshot_dir, engine=engine, spark_master=spark_master,
                                        password=secret, if_exists=if_exists,
                                        batch_size=batch_size, workers=workers,
                                        lock_wait=lock_wait, progress=shown)
    if as_json:
        echo_json(report.to_json())
    _no_edge_lost(report)
    if as_json:
        return
    how = "created in an empty database" if report.write_mode == "create" else "merged"
    who = "Spark writers" if engine == "spark" else "workers"
    click.echo(f"loaded {sum(report.nodes.values())} nodes and {sum(report.edges.values())} "
               f"relationships into {report.target} in {report.seconds:.2f} s "
               f"({how}, {report.workers} {who})")


@cli.command("neo4j-server")
@click.option("--port", type=click.IntRange(0, 65535), default=7687, show_default=True,
              help="Bolt port on 127.0.0.1 (0: a free one).")
@click.option("--data", "data_dir", type=PATH,
              help="Data folder to keep between runs (default: a temporary one).")
@click.option("--password-env", metavar="VAR",
              help="Require user neo4j with the password in environment variable VAR "
                   "(without it the server has NO authentication).")
def neo4j_server(port: int, data_dir: Path | None, password_env: str | None) -> None:
    """Run a local Neo4j 5.26 server (from enrich/neo4j-launcher) until Ctrl-C.

    For development and trying graphkit out: Bolt on 127.0.0.1 only. Without
    --password-env there is no authentication: anyone who can reach the port
    can read and change the database.

    Example: NEO4J_PW=... graphkit neo4j-server --port 7687 --password-env NEO4J_PW
    """
    import os
    import time

    password = os.environ.get(password_env) if password_env else None
    if password_env and not password:
        raise UserError(f"--password-env {password_env}: that environment variable is empty "
                        "or not set")
    if data_dir is not None:
        if data_dir.exists() and not data_dir.is_dir():
            # Was a FileExistsError / NotADirectoryError traceback from its mkdir.
            raise UserError(f"{data_dir}: --data is not a folder; give a folder to keep "
                            "the database in (it is made if missing)")
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # under a file, not writable, …
            raise UserError(f"{exc.filename or data_dir}: cannot make the --data folder: "
                            f"{exc.strerror}") from None
    if password is None:
        where = f"127.0.0.1:{port}" if port else "its port on 127.0.0.1"
        err(f"WARNING: this Neo4j has NO authentication: anyone who can reach {where} "
            "can read and change it. Use --password-env VAR to require a password.")
    _terminate_as_interrupt()
    with progress() as say:
        say("building/starting Neo4j (first run downloads its jars from Maven Central)")
        server = graphkit.start_local_neo4j(data_dir, password=password, auth=password is not None,
                                   port=port, say=err)
    with server:
        creds = (f"  NEO4J_USERNAME=neo4j NEO4J_PASSWORD=\"${password_env}\""
                 if password_env else "")
        click.echo(f"Neo4j is up: export NEO4J_URI={server.uri}{creds}  (Ctrl-C stops it)")
        try:
            while server.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass


def _terminate_as_interrupt() -> None:
    """SIGTERM (``kill``, a service manager, ``timeout``) ends the server as Ctrl-C does:
    Python's default action ended the process at once, leaving the temporary data
    folder behind (and the JVM running until it noticed its stdin close)."""
    import signal

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def _no_edge_lost(report: Any) -> None:
    """A snapshot's relationships all have their ends (the reader checks), so one not
    written means its end node was gone when it was: another load (``--if-exists
    replace``) deleted and wrote the graph again meanwhile. Was said nowhere: "loaded
    100 nodes and 180 relationships" for a graph of 268, exit 0."""
    lost = sum(report.skipped_edges.values())
    if lost:
        kinds = ", ".join(f"{t} ({n})" for t, n in sorted(report.skipped_edges.items()))
        raise UserError(f"{lost} relationship(s) were not written: {kinds}; their end "
                        "nodes were not in the database when written (another load or "
                        "writer changed it meanwhile?); load again")
