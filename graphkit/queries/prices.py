"""What tokens cost: a price table shipped with graphkit, never fetched at run time.

``prices.json`` beside this module is dated and names its source; ``--prices
FILE`` replaces it with a file of the same shape::

    {"as_of": "2026-12-01", "source": "…", "unit": "USD per million tokens",
     "models": {"claude-sonnet-4-5": {"input": 3.0, "output": 15.0,
                                      "cache_creation": 3.75, "cache_read": 0.3,
                                      "cache_creation_1h": 6.0, "web_search": 10.0}}}

``cache_creation`` is the 5-minute cache write; ``cache_creation_1h`` the 1-hour one
(absent: 2x input, Anthropic's rate for it); ``web_search`` is USD per 1,000 web
searches (absent: a thread that searched has an unknown cost). A model the table
does not name is *unpriced*: its cost is unknown (``None``), never zero.

What Claude bills is priced as it bills it: the 1-hour part of the cache writes at the
1-hour rate and the rest at the 5-minute one, each web search at the fee, and an
advisor model's tokens at that model's rates (they come as the advisor's own usage,
:class:`~graphkit.queries.tokens.Tokens` of its model). Thinking tokens are part of the
output count and priced as output, once.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from graphkit.core.errors import GraphkitError
from graphkit.core.files import read_file
from graphkit.queries.tokens import UNKNOWN_MODEL, Tokens
from graphkit.queries.usage import SessionUsage, ThreadUsage

DEFAULT_PRICES = Path(__file__).with_name("prices.json")
_KINDS = ("input", "output", "cache_creation", "cache_read")
# Optional per model: the 1-hour cache write (USD per million tokens) and the web-search
# fee (USD per 1,000 searches).
_MORE = ("cache_creation_1h", "web_search")
# Anthropic's 1-hour cache write is twice the input rate (its pricing page's multipliers).
HOUR_FACTOR = 2.0
_DATE = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")


class Rates(NamedTuple):
    """What one model costs: per million tokens of each kind, and per 1,000 web
    searches (None: the table names no fee)."""

    input: float
    output: float
    cache_creation: float
    cache_read: float
    cache_creation_1h: float
    web_search: float | None


@dataclass(frozen=True)
class PriceTable:
    """Prices in USD per million tokens by model, with where they come from: what
    :func:`load_prices` returns.

    ``models`` maps a model's name to its (input, output, cache write, cache read)
    prices; ``as_of``, ``source`` and ``path`` say where they come from. ``price(model)``
    finds a model's prices (a provider prefix and a date suffix are tried away), and
    ``cost(model, tokens)`` is what the tokens cost in USD (None: no price).

    >>> from graphkit.queries.tokens import Tokens
    >>> table = PriceTable({"m": (1.0, 2.0, 1.25, 0.1)})
    >>> table.cost("m", Tokens(input_tokens=2_000_000)), table.cost("other", Tokens(1))
    (2.0, None)
    """

    models: dict[str, tuple[float, float, float, float]]
    as_of: str | None = None
    source: str | None = None
    path: str | None = None
    # By model, where the table gives them: the 1-hour cache write rate (else
    # HOUR_FACTOR x input) and the fee per 1,000 web searches (else none).
    hour: dict[str, float] = field(default_factory=dict)
    search: dict[str, float] = field(default_factory=dict)
    # Each name's answer, found once: `usage` asks per thread and model, and the name's
    # variants (prefix, date suffix) were a regular expression each time.
    _found: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)

    def price(self, model: str) -> tuple[float, float, float, float] | None:
        """The model's (input, output, cache write, cache read) prices, or None.

        The name is tried as given, then without a provider prefix
        (``anthropic/``) and a date suffix (``-20250929``).

        >>> load_prices().price("claude-sonnet-4-5-20250929")[0]
        3.0
        >>> load_prices().price("someone-elses-model") is None
        True
        """
        name = self._name(model)
        return None if name is None else self.models[name]

    def _name(self, model: str) -> str | None:
        """The table's name for ``model`` (see :meth:`price`), or None."""
        if model in self._found:
            return self._found[model]
        name = model.strip()
        found = None
        for candidate in (name, name.rsplit("/", 1)[-1]):
            for n in (candidate, _DATE.sub("", candidate)):
                if found is None and n in self.models:
                    found = n
        self._found[model] = found
        return found

    def rates(self, model: str) -> Rates | None:
        """Every rate of ``model`` (:class:`Rates`), or None if it is unpriced.

        >>> r = load_prices().rates("claude-sonnet-4-5")
        >>> r.cache_creation, r.cache_creation_1h, r.web_search
        (3.75, 6.0, 10.0)
        """
        name = self._name(model)
        if name is None:
            return None
        p = self.models[name]
        return Rates(*p, self.hour.get(name, HOUR_FACTOR * p[0]), self.search.get(name))

    def cost(self, model: str, tokens: Tokens) -> float | None:
        """What ``tokens`` of ``model`` cost in USD, or None if it is unpriced (its
        web searches too: a model the table names no fee for that searched).

        The 1-hour part of the cache writes is priced at the 1-hour rate, the rest at
        the 5-minute one; web searches at the fee per 1,000.

        >>> t = load_prices()
        >>> t.cost("claude-haiku-4-5", Tokens(cache_creation_input_tokens=3_000_000,
        ...                                   cache_creation_1h_input_tokens=1_000_000))
        4.5
        >>> t.cost("claude-haiku-4-5", Tokens(web_search_requests=3))
        0.03
        """
        found = self._priced(model, tokens)
        return None if found is None or not found[1] else found[0]

    def _priced(self, model: str, tokens: Tokens) -> tuple[float, bool] | None:
        """What ``tokens`` of ``model`` cost in USD with its searches when the table
        has a fee for them, and whether it has (where they searched); None if the
        model is unpriced."""
        r = self.rates(model)
        if r is None:
            return None
        hour = min(tokens.cache_creation_1h_input_tokens, tokens.cache_creation_input_tokens)
        # Each kind only where there are some: none of a kind costs nothing, even at a
        # rate past a float's range (0 x infinity is no number).
        usd = sum(n * rate for n, rate in (
            (tokens.input_tokens, r.input), (tokens.output_tokens, r.output),
            (tokens.cache_creation_input_tokens - hour, r.cache_creation),
            (hour, r.cache_creation_1h), (tokens.cache_read_input_tokens, r.cache_read))
            if n) / 1_000_000
        searched = tokens.web_search_requests > 0
        if searched and r.web_search is not None:
            usd += tokens.web_search_requests * r.web_search / 1_000
        if not math.isfinite(usd):
            raise self.too_large(f"model {model!r}")
        return usd, not searched or r.web_search is not None

    def too_large(self, what: str) -> GraphkitError:
        """The error for a cost past a float's range (a price of 1e308 times any
        tokens): an infinite cost is no answer, and JSON cannot hold it."""
        return GraphkitError(
            f"the cost of {what} is past what a number can hold (over "
            f"{sys.float_info.max:.3g} USD)", path=self.path,
            hint="check its prices in the price table (USD per million tokens)")


@dataclass
class Cost:
    """A cost added up over models: ``usd``, the priced part, and ``unpriced``, the
    tokens of each model the price table has no price for (their cost is unknown, not
    zero). ``known`` is the cost, or None where any tokens are unpriced; ``note`` says
    why.

    >>> from graphkit.queries.tokens import Tokens
    >>> cost = Cost()
    >>> cost.add(PriceTable({"m": (1.0, 2.0, 1.0, 0.0)}), "m", Tokens(output_tokens=500_000))
    >>> cost.usd, cost.known
    (1.0, 1.0)
    >>> cost.add(PriceTable({}), "mystery", Tokens(input_tokens=10))
    >>> cost.known is None, sorted(cost.unpriced)
    (True, ['mystery'])
    """

    usd: float = 0.0
    unpriced: dict[str, Tokens] = field(default_factory=dict)

    def add(self, table: PriceTable, model: str, tokens: Tokens) -> None:
        """Add ``tokens`` of ``model`` (searches the table names no fee for are
        unpriced, the tokens beside them priced)."""
        if not tokens.total() and not tokens.web_search_requests:
            return
        found = table._priced(model, tokens)
        if found is None:
            self.unpriced[model] = self.unpriced.get(model, Tokens()) + tokens
            return
        self.usd += found[0]
        if not math.isfinite(self.usd):  # each cost finite, their sum not
            raise table.too_large(f"model {model!r}")
        if not found[1]:
            self.unpriced[model] = self.unpriced.get(model, Tokens()) + Tokens(
                web_search_requests=tokens.web_search_requests)

    @classmethod
    def of(cls, table: PriceTable, by_model: dict[str, Tokens]) -> Cost:
        """What ``by_model``'s tokens cost, model by model in name order (so two
        answers adding the same tokens agree to the last digit).

        >>> c = Cost.of(load_prices(), {"claude-haiku-4-5": Tokens(1_000_000), "x": Tokens(5)})
        >>> c.usd, c.known, c.note
        (1.0, None, 'no price for x')
        """
        cost = cls()
        for model in sorted(by_model):
            cost.add(table, model, by_model[model])
        return cost

    def merge(self, other: Cost, table: PriceTable) -> None:
        """Add ``other``'s priced and unpriced parts to this cost."""
        self.usd += other.usd
        if not math.isfinite(self.usd):
            raise table.too_large("these sessions")
        for model, tokens in other.unpriced.items():
            self.unpriced[model] = self.unpriced.get(model, Tokens()) + tokens

    @property
    def known(self) -> float | None:
        """The cost in USD when every model was priced, else None (unknown, not zero)."""
        return None if self.unpriced else round(self.usd, 6)

    @property
    def note(self) -> str | None:
        """Why :attr:`known` is None (the models the price table lacks, and tokens that
        name no model); None when the cost is known."""
        if not self.unpriced:
            return None
        named = [m for m in sorted(self.unpriced) if m != UNKNOWN_MODEL]
        # A model whose only unpriced part is web searches has prices, but no fee.
        tokens = [m for m in named if self.unpriced[m].total()]
        searched = [m for m in named if not self.unpriced[m].total()]
        why = [f"no price for {', '.join(tokens)}"] if tokens else []
        if searched:
            why.append(f"no web-search fee for {', '.join(searched)}")
        if UNKNOWN_MODEL in self.unpriced:
            why.append(f"{self.unpriced[UNKNOWN_MODEL].total():,} tokens name no model")
        return "; ".join(why)

    def to_json(self) -> dict[str, Any]:
        """``{"cost_usd", "priced_usd", "unpriced_models"}``."""
        return {"cost_usd": self.known, "priced_usd": round(self.usd, 6),
                "unpriced_models": sorted(self.unpriced)}


def _price(v: Any) -> bool:
    """A usable price: a finite number, not negative (1e400 reads as infinity; an
    integer of 400 digits is past a float too: math.isfinite raised OverflowError)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return 0 <= v <= sys.float_info.max
    return isinstance(v, float) and math.isfinite(v) and v >= 0


def _no_key_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (json keeps the last without a word:
    a model priced twice, or a second "models" object hiding the first)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} is given twice in one object")
        out[key] = value
    return out


# The fields a price table may hold: a misspelt one ("inptu") left a price at its
# default without a word, so any other is refused, as a contract refuses unknown keys.
_TOP = ("as_of", "source", "unit", "models")


def _known_keys(obj: dict[str, Any], known: tuple[str, ...], model: str | None, text: str,
                where: Path) -> None:
    """Refuse a key of ``obj`` (the table, or ``model``'s prices) not in ``known``,
    naming its line and column in ``text`` where it is written as it reads."""
    for key in obj:
        if key in known:
            continue
        at = 0
        if model is not None:  # the key after its model's name, not another model's
            found = re.search(rf'"{re.escape(json.dumps(model)[1:-1])}"\s*:', text)
            at = found.end() if found else 0
        found = re.compile(rf'"{re.escape(json.dumps(key)[1:-1])}"\s*:').search(text, at)
        place = str(where)
        if found:  # FILE:LINE:COLUMN, as compilers name a place
            line = text.count("\n", 0, found.start()) + 1
            place += f":{line}:{found.start() - text.rfind(chr(10), 0, found.start())}"
        what = f"model {model!r} has" if model is not None else "the price table has"
        raise GraphkitError(f"{what} an unknown field {key!r}", path=place,
                            hint=f"the known ones are {', '.join(known)}; fix its name or "
                                 "remove it")


def load_prices(path: str | Path | None = None) -> PriceTable:
    r"""Return the price table at ``path``, or the one shipped with graphkit.

    A table is JSON: ``{"models": {NAME: {"input", "output", "cache_creation",
    "cache_read"}}}`` in USD per million tokens (``cache_creation`` defaults to
    ``input``, the others to 0), with optional ``as_of`` and ``source``. The shipped
    one holds Anthropic's and OpenAI's list prices and says where they come from.

    Parameters
    ----------
    path : str or Path, optional
        A price table file (``--prices``); default: the shipped one.

    Returns
    -------
    PriceTable

    Raises
    ------
    GraphkitError
        The file cannot be read, is not JSON, names a key twice or one no table has, or
        a price is not a number (one line naming the file, and the line where known).

    Examples
    --------
    >>> from graphkit.queries.tokens import Tokens
    >>> load_prices().price("claude-sonnet-4-5")
    (3.0, 15.0, 3.75, 0.3)
    >>> import json, tempfile
    >>> mine = Path(tempfile.mkdtemp()) / "prices.json"
    >>> _ = mine.write_text(json.dumps({"models": {"my-model": {"input": 1, "output": 2}}}))
    >>> tokens = Tokens(input_tokens=1_000_000, output_tokens=500_000)
    >>> load_prices(mine).cost("my-model", tokens)
    2.0
    >>> _ = mine.write_text('{"models": {"my-model": {"input": "cheap"}}}')
    >>> load_prices(str(mine))
    Traceback (most recent call last):
    ...
    graphkit.core.errors.GraphkitError: ...prices.json: model 'my-model' needs numbers for ...
    """
    where = Path(path) if path else DEFAULT_PRICES
    try:
        # Only a regular file: a FIFO given as --prices waited for a writer forever,
        # a link to /dev/zero was read until memory ran out.
        # utf-8-sig: a byte-order mark (Windows editors write one) is read as nothing,
        # as in a contract.
        text = read_file(where)[1].decode("utf-8-sig")
        data = json.loads(text, object_pairs_hook=_no_key_twice)
    except OSError as exc:
        raise GraphkitError(f"cannot read the price table: {exc.strerror}", path=str(where),
                            hint="give --prices a JSON file of model prices") from None
    except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
        raise GraphkitError(f"the price table is not JSON ({exc})", path=str(where)) from None
    if isinstance(data, dict):
        _known_keys(data, _TOP, None, text, where)
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise GraphkitError("the price table has no \"models\" object", path=str(where),
                            hint='{"models": {"NAME": {"input": 3.0, "output": 15.0, '
                                 '"cache_creation": 3.75, "cache_read": 0.3}}}')
    table: dict[str, tuple[float, float, float, float]] = {}
    hour: dict[str, float] = {}
    search: dict[str, float] = {}
    for name, p in models.items():
        if not isinstance(p, dict) or not all(_price(p.get(k, 0)) for k in (*_KINDS, *_MORE)) \
                or "input" not in p:
            raise GraphkitError(f"model {name!r} needs numbers for {', '.join(_KINDS)} "
                                f"(and, if given, {', '.join(_MORE)})", path=str(where))
        _known_keys(p, (*_KINDS, *_MORE), str(name), text, where)
        inp = float(p["input"])
        table[str(name)] = (inp, float(p.get("output", 0)),
                            float(p.get("cache_creation", inp)), float(p.get("cache_read", 0)))
        if "cache_creation_1h" in p:
            hour[str(name)] = float(p["cache_creation_1h"])
        if "web_search" in p:
            search[str(name)] = float(p["web_search"])
    return PriceTable(table, data.get("as_of"), data.get("source"), str(where), hour, search)


@dataclass
class UsageGroup:
    """Tokens and their cost for one key of a grouping (``graphkit usage --by``): a
    model, an agent type, a day or a session, over the sessions asked about.

    ``key`` names the group, ``tokens`` and ``cost`` are its totals, ``sessions`` how
    many sessions spent tokens in it, and ``session_id`` the session it lies in (None
    for a group across sessions). :attr:`UsageReport.groups` holds them.

    >>> from graphkit.queries.tokens import Tokens
    >>> group = UsageGroup("claude-sonnet-4-5", Tokens(output_tokens=10), Cost(usd=0.00015))
    >>> group.to_json("model")["cost_usd"]
    0.00015
    """

    key: str
    tokens: Tokens
    cost: Cost
    # The session the group lies in, where it lies in one (--by session, or one session
    # asked about); None for a group across sessions.
    session_id: str | None = None
    sessions: int = 1  # how many sessions spent tokens in it

    def to_json(self, by: str) -> dict[str, Any]:
        """``{<by>, <the four token counts>, "cost_usd", "unpriced_models"}``."""
        return {by: self.key, **self.tokens.to_json(), "cost_usd": self.cost.known,
                "unpriced_models": sorted(self.cost.unpriced)}


#: What ``usage --by`` groups by.
GROUPINGS = ("session", "day", "model", "agent-type")


def agent_type(t: ThreadUsage) -> str:
    """A thread's agent type for ``--by agent-type``: the subagent's type, else
    its kind (``main``, ``thread``, ``subagent``, ``child-thread``)."""
    return t.agent_type or t.kind or "thread"


def usage_groups(u: SessionUsage, by: str, table: PriceTable) -> list[UsageGroup]:
    """The session's threads' own usage grouped ``by`` ``model`` or
    ``agent-type``, each group costed model by model, largest first."""
    return group_usage([u], by, table)


def group_usage(answers: list[SessionUsage], by: str, table: PriceTable,
                days: dict[str, str] | None = None) -> list[UsageGroup]:
    """The threads' own usage of ``answers`` grouped ``by`` one of :data:`GROUPINGS`
    across the sessions, each group costed model by model.

    ``day`` is the UTC day a thread started (``days``: thread node id → ``YYYY-MM-DD``;
    a graph keeps each thread's first and last time, not each message's, so a thread
    that runs past midnight counts on its first day). Sessions come in ``answers``'
    order, days in time order, models and agent types largest first.
    """
    if by not in GROUPINGS:
        raise GraphkitError(f"cannot group usage by {by!r}",
                            hint=f"group by one of {', '.join(GROUPINGS)}")
    groups: dict[str, UsageGroup] = {}
    seen: dict[str, set[str]] = {}
    for u in answers:
        for t in u.threads:
            for model, tokens in t.by_model.items():
                key = (u.session_id if by == "session" else model if by == "model"
                       else agent_type(t) if by == "agent-type"
                       else (days or {}).get(t.node_id) or "(no time)")
                g = groups.get(key)
                if g is None:
                    g = groups[key] = UsageGroup(key, Tokens(), Cost())
                g.tokens = g.tokens + tokens
                g.cost.add(table, model, tokens)
                seen.setdefault(key, set()).add(u.session_id)
        if by == "session" and u.session_id not in groups:  # asked for, spent nothing
            groups[u.session_id] = UsageGroup(u.session_id, Tokens(), Cost())
            seen[u.session_id] = set()
    one = answers[0].session_id if len(answers) == 1 else None
    for key, g in groups.items():
        g.sessions = len(seen[key])
        g.session_id = key if by == "session" else one
    out = list(groups.values())
    if by in ("model", "agent-type"):
        out.sort(key=lambda g: (-g.tokens.total(), g.key))
    elif by == "day":
        out.sort(key=lambda g: g.key)
    return out


def session_cost(u: SessionUsage, table: PriceTable) -> Cost:
    """What the whole session cost: its tokens added up per model, then priced
    (:meth:`Cost.of`)."""
    return Cost.of(table, u.by_model())


def total_cost(groups: list[UsageGroup], table: PriceTable) -> tuple[Tokens, Cost]:
    """The tokens and cost of all ``groups`` together (the total row of a table)."""
    tokens, cost = Tokens(), Cost()
    for g in groups:
        tokens = tokens + g.tokens
        cost.merge(g.cost, table)
    return tokens, cost


def thread_cost(t: ThreadUsage, table: PriceTable) -> Cost:
    """What one thread's own tokens cost, model by model."""
    cost = Cost()
    for model, tokens in t.by_model.items():
        cost.add(table, model, tokens)
    return cost


def subtree_costs(u: SessionUsage, table: PriceTable,
                  own: list[Cost] | None = None) -> list[Cost]:
    """Each thread's subtree cost, in :attr:`SessionUsage.threads`' order (depth first).

    One pass from the last thread, as :func:`graphkit.queries.usage.session_usage`
    adds up tokens: a thread's subtree is it and its children's subtrees, which lie on
    the stack above anything shallower. Adding up every thread after each took minutes
    on a chain of subagents 20k deep. The dollars are summed exactly (as fractions) and
    rounded once, so no order of adding changes a digit.

    ``own``: each thread's :func:`thread_cost`, where the caller has them already.
    Raises :class:`GraphkitError` where a subtree's sum is past a float's range (each
    thread's cost finite, their sum not).
    """
    from fractions import Fraction

    limit = Fraction(sys.float_info.max)
    out: list[Cost] = []
    done: list[tuple[int, float | Fraction, dict[str, Tokens]]] = []
    for i in range(len(u.threads) - 1, -1, -1):
        t = u.threads[i]
        mine = own[i] if own is not None else thread_cost(t, table)
        if not done or done[-1][0] <= t.depth:  # nothing below it: its own cost
            done.append((t.depth, mine.usd, mine.unpriced))
            out.append(Cost(mine.usd, dict(mine.unpriced)))
            continue
        usd, unpriced = Fraction(mine.usd), dict(mine.unpriced)
        while done and done[-1][0] > t.depth:
            _, below_usd, below = done.pop()
            usd += Fraction(below_usd)  # a leaf's float, exactly
            for m, tok in below.items():
                unpriced[m] = unpriced.get(m, Tokens()) + tok
        if usd > limit:  # each thread's cost finite, a subtree's sum not
            raise table.too_large("a subagent tree")
        done.append((t.depth, usd, unpriced))
        out.append(Cost(float(usd), dict(unpriced)))
    return out[::-1]


# -- Claude Code's own figure beside graphkit's -----------------------------------------
@dataclass
class ClaudeCost:
    """What Claude Code itself says a session cost, beside graphkit's figure.

    ``source``: ``cost-state`` (the transcript's last cost-state record, Claude Code's
    running total) or ``requests`` (the per-request ``cost_usd`` HypAware's OTEL rows
    carry, added up). ``models``: Claude's cost and counts per model, where it gives
    them. ``gap``: Claude's figure less graphkit's (None while graphkit's is unknown);
    ``cause``: why they differ, where the data says.
    """

    usd: float
    source: str
    models: dict[str, dict[str, float]] = field(default_factory=dict)
    gap: float | None = None
    cause: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"claude_cost_usd", "cost_gap_usd", "cost_gap_cause"}``."""
        return {"claude_cost_usd": round(self.usd, 6), "cost_gap_usd": self.gap,
                "cost_gap_cause": self.cause}


def _base(model: str) -> str:
    """A model name without provider prefix and date suffix (as the table matches it)."""
    return _DATE.sub("", model.strip().rsplit("/", 1)[-1])


# Claude Code's modelUsage counts, in :data:`~graphkit.queries.tokens.TOKEN_FIELDS` order.
_COUNTED = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
            "cache_read_input_tokens")


def counts_match(claude: ClaudeCost, by_model: dict[str, Tokens]) -> bool:
    """Whether Claude's per-model counts are the tokens ``by_model`` holds, model by
    model (names without provider prefix or date); False without per-model counts."""
    if not claude.models:
        return False
    ours: dict[str, int] = {}
    for model, tokens in by_model.items():
        if tokens.total():
            ours[_base(model)] = ours.get(_base(model), 0) + tokens.total()
    theirs = {_base(m): sum(int(u.get(k, 0)) for k in _COUNTED)
              for m, u in claude.models.items()}
    return {m: n for m, n in theirs.items() if n} == ours


def compare_claude(claude: ClaudeCost, cost: Cost, by_model: dict[str, Tokens],
                   table: PriceTable) -> ClaudeCost:
    """``claude`` with its gap to graphkit's ``cost`` of the session (its tokens
    ``by_model``) and the gap's cause where one is known: models or tokens Claude
    counted that the transcript does not hold (Claude Code's own requests: its web
    searches, permission checks, titles), or the reverse, or the same tokens at other
    rates (fast mode, data residency, long context: the transcript does not say).

    >>> t = load_prices()
    >>> mine = {"claude-haiku-4-5": Tokens(1_000_000)}
    >>> theirs = ClaudeCost(1.5, "cost-state", {"claude-haiku-4-5": {
    ...     "cost_usd": 1.5, "input_tokens": 1_500_000}})
    >>> c = compare_claude(theirs, Cost.of(t, mine), mine, t)
    >>> c.gap, c.cause
    (0.5, 'Claude counted 500,000 more tokens of claude-haiku-4-5 than the transcripts hold')
    """
    known = cost.known
    gap = None if known is None else round(claude.usd - known, 6)
    why: list[str] = []
    if known is None:
        why.append(f"graphkit's figure is unknown ({cost.note})")
    elif not gap:
        return ClaudeCost(claude.usd, claude.source, claude.models, gap, None)
    ours: dict[str, Tokens] = {}
    for model, tokens in by_model.items():
        key = _base(model)
        ours[key] = ours.get(key, Tokens()) + tokens
    theirs = {_base(m): u for m, u in claude.models.items()}
    for model in sorted(set(theirs) | set(ours)):
        u, mine = theirs.get(model), ours.get(model)
        if u is None:
            if claude.models and mine is not None and mine.total():
                why.append(f"the transcripts hold {mine.total():,} tokens of {model} that "
                           "Claude did not count")
            continue
        counted = sum(int(u.get(k, 0)) for k in _COUNTED)
        held = mine.total() if mine is not None else 0
        if not held and counted:
            usd = u.get("cost_usd")
            what = f" (${usd:.4f})" if isinstance(usd, float | int) else ""
            why.append(f"Claude counted {model}{what}, which no message of the transcripts "
                       "names: Claude Code's own requests (its web searches, permission "
                       "checks, titles)")
        elif counted > held:
            why.append(f"Claude counted {counted - held:,} more tokens of {model} than the "
                       "transcripts hold")
        elif counted < held:
            why.append(f"the transcripts hold {held - counted:,} more tokens of {model} "
                       "than Claude counted")
        elif mine is not None and _other_rates(model, u, mine, table):
            why.append(f"the same tokens of {model} at other rates than the price "
                       "table's (fast mode, data residency or long context: the "
                       "transcripts do not say)")
    # Searches as a count of the session: Claude puts a WebSearch's on the model that ran
    # it, the transcript on the message that asked for it.
    searched = sum(int(u.get("web_search_requests", 0)) for u in theirs.values())
    ran = sum(t.web_search_requests for t in ours.values())
    if any("web_search_requests" in u for u in theirs.values()) and searched != ran:
        why.append(f"Claude counted {searched:,} web searches, the transcripts {ran:,}")
    return ClaudeCost(claude.usd, claude.source, claude.models, gap,
                      "; ".join(why) if why else None)


def _other_rates(model: str, u: dict[str, float], mine: Tokens, table: PriceTable) -> bool:
    """Whether Claude's cost of ``model``'s tokens (its searches' fees taken out) is
    not graphkit's for the same tokens."""
    theirs = u.get("cost_usd")
    r = table.rates(model)
    if not isinstance(theirs, float | int) or r is None:
        return False
    fee = r.web_search or 0.0
    tokens = Tokens(mine.input_tokens, mine.output_tokens, mine.cache_creation_input_tokens,
                    mine.cache_read_input_tokens, mine.cache_creation_1h_input_tokens)
    ours = table.cost(model, tokens)
    return ours is not None and bool(round(
        float(theirs) - int(u.get("web_search_requests", 0)) * fee / 1_000 - ours, 6))
