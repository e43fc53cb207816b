"""Where and as whom graphkit connects to Neo4j, and the driver it connects with.

Settings follow the official driver's conventions and are read from the
environment when a config is made, never at import: ``NEO4J_URI``,
``NEO4J_USERNAME``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE``. Credentials
written into the URI (``bolt://user:password@host``) are taken out of it and
used as user and password; no message ever shows them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from graphkit.core.errors import StoreError, first_line

DEFAULT_URI = "neo4j://localhost:7687"
SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
INSTALL_HINT = "install the Neo4j driver: pip install 'neo4j>=5.20'"

# scheme://[userinfo@]host[:port][/...]; userinfo may hold any character but "/".
_URI = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?:(?P<userinfo>[^/?#]*)@)?"
                  r"(?P<hostport>[^/?#@]*)(?P<rest>.*)", re.DOTALL)


@dataclass(frozen=True)
class Neo4jConfig:
    """Where and as whom to connect to Neo4j. ``password`` is never shown in ``repr``.

    ``from_env()`` reads ``NEO4J_URI``, ``NEO4J_USERNAME``, ``NEO4J_PASSWORD`` and
    ``NEO4J_DATABASE`` (explicit arguments first).

    >>> Neo4jConfig(uri="bolt://db:7687", password="secret")
    Neo4jConfig(uri='bolt://db:7687', user='neo4j', database=None)
    """

    uri: str = DEFAULT_URI
    user: str = "neo4j"
    password: str | None = field(default=None, repr=False)
    database: str | None = None  # None: the server's home database

    def __post_init__(self) -> None:
        # Credentials in the URI move to user/password (the driver refuses
        # them there, and its error would echo the whole URI).
        m = _URI.fullmatch(self.uri.strip())
        if m is None or m.group("userinfo") is None:
            return
        user, _, password = m.group("userinfo").partition(":")
        clean = f"{m.group('scheme')}://{m.group('hostport')}{m.group('rest')}"
        object.__setattr__(self, "uri", clean)
        if self.password is None and password:
            object.__setattr__(self, "password", unquote(password))
            if user:
                object.__setattr__(self, "user", unquote(user))

    @classmethod
    def from_env(
        cls,
        uri: str | None = None,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
    ) -> Neo4jConfig:
        """Explicit arguments first, then ``NEO4J_*`` variables, then defaults."""
        env = os.environ
        return cls(
            uri=uri or env.get("NEO4J_URI") or DEFAULT_URI,
            user=user or env.get("NEO4J_USERNAME") or "neo4j",
            password=password if password is not None else env.get("NEO4J_PASSWORD"),
            database=database or env.get("NEO4J_DATABASE") or None,
        )

    @property
    def display_uri(self) -> str:
        """The URI without any ``user:password@`` part, safe to print; never raises."""
        m = _URI.fullmatch(self.uri.strip())
        if m is None:  # not scheme://…: show it with anything before an "@" cut off
            return "***@" + self.uri.rsplit("@", 1)[1] if "@" in self.uri else self.uri
        return f"{m.group('scheme')}://{m.group('hostport')}"

    def check(self) -> None:
        """A one-line :class:`StoreError` if the URI is not one the driver can use."""
        where = self.display_uri
        m = _URI.fullmatch(self.uri.strip())
        if m is None or (m.group("hostport").startswith("[") and "]" not in m.group("hostport")):
            raise StoreError(f"Neo4j URI {where!r} is not scheme://host[:port]",
                             hint="e.g. NEO4J_URI=bolt://127.0.0.1:7687")
        if m.group("scheme").lower() not in SCHEMES:
            raise StoreError(f"Neo4j URI {where!r}: graphkit speaks Bolt, not "
                             f"{m.group('scheme')!r}", hint=f"use one of {', '.join(SCHEMES)}")
        hostport = m.group("hostport")
        host, port = hostport, None
        if hostport.startswith("["):  # [IPv6]:port
            host, _, tail = hostport.partition("]")
            if not tail.startswith(":") and tail:
                host = ""
            port = tail[1:] or None
        elif ":" in hostport:
            host, port = hostport.rsplit(":", 1)
        if not host.strip("[") or any(c.isspace() for c in hostport):
            raise StoreError(f"Neo4j URI {where!r} names no host",
                             hint="e.g. NEO4J_URI=bolt://127.0.0.1:7687")
        if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
            raise StoreError(f"Neo4j URI {where!r}: port {port!r} is not a number from 1 to "
                             "65535", hint="e.g. NEO4J_URI=bolt://127.0.0.1:7687")
        if (self.database or "").strip().lower() == "system":
            # Neo4j answered every query there with its own words: "Not a recognised
            # system command or procedure. This Cypher command can only be executed in
            # a user database: RETURN 1" and more, on one long line.
            raise StoreError("NEO4J_DATABASE 'system' is Neo4j's own system database, which "
                             "holds no graph", hint="name a user database (Community has "
                                                    "one, 'neo4j'), or unset NEO4J_DATABASE")

    def redact(self, text: str) -> str:
        """``text`` with the password and any URI credentials replaced by ``***``."""
        text = re.sub(r"://[^/\s@'\"]*@", "://***@", text)
        if self.password and len(self.password) >= 3:
            text = text.replace(self.password, "***")
        return text


def driver_module() -> Any:
    """The ``neo4j`` driver package, or a one-line :class:`StoreError` saying how
    to install it (never an ImportError traceback)."""
    try:
        import neo4j
    except ImportError as exc:
        raise StoreError(f"the Neo4j driver cannot be imported ({first_line(exc, 300)})",
                         hint=INSTALL_HINT) from None
    return neo4j
