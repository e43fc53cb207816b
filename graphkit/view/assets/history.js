// The history page: every session of the snapshot as a table, sorted and filtered
// here (nothing is fetched: the data is the page's graphkit-data element).
(function () {
  "use strict";
  var t0 = performance.now();
  var data = JSON.parse(document.getElementById("graphkit-data").textContent);
  var all = data.sessions;
  all.forEach(function (r) { r.start = stamp(r.first_seen); });
  var COLUMNS = [
    ["first_seen", "start", false], ["id", "session", false], ["workspace", "workspace", false],
    ["threads", "threads", true], ["subagents", "subagents", true],
    ["messages", "messages", true], ["tokens", "tokens", true], ["cost_usd", "cost", true]];
  var state = {sort: "first_seen", desc: true, workspace: "", since: "", until: "", search: ""};

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function day(s) { return s ? String(s).slice(0, 10) : ""; }
  function stamp(s) {
    if (!s) { return ""; }
    var d = new Date(s);
    return isNaN(d) ? String(s) : d.toISOString().slice(0, 16).replace("T", " ");
  }
  function usd(x) { return "$" + x.toFixed(4); }
  function cost(r) {
    // Unknown is never zero: a session with an unpriced model shows what is priced + unpriced.
    return r.cost_usd !== null ? usd(r.cost_usd) : usd(r.priced_usd) + " + unpriced";
  }
  // One formatter for all: toLocaleString makes one per call (most of a 3,000-row draw).
  var NUMBER = new Intl.NumberFormat("en-US");
  function num(n) { return n === null || n === undefined ? "" : NUMBER.format(n); }

  function readHash() {
    var h = new URLSearchParams(location.hash.slice(1));
    if (h.get("sort")) {
      var k = h.get("sort"), desc = k.charAt(0) === "-";
      k = desc ? k.slice(1) : k;
      if (COLUMNS.some(function (c) { return c[0] === k; })) { state.sort = k; state.desc = desc; }
    }
    ["workspace", "since", "until", "search"].forEach(function (k) {
      if (h.get(k) !== null) { state[k] = h.get(k); }
    });
  }
  function writeHash() {
    var h = new URLSearchParams();
    h.set("sort", (state.desc ? "-" : "") + state.sort);
    ["workspace", "since", "until", "search"].forEach(function (k) {
      if (state[k]) { h.set(k, state[k]); }
    });
    history.replaceState(null, "", "#" + h.toString());
  }

  function compare(a, b) {
    var k = state.sort, x = a[k], y = b[k];
    if (k === "cost_usd") {
      x = a.cost_usd === null ? a.priced_usd : a.cost_usd;
      y = b.cost_usd === null ? b.priced_usd : b.cost_usd;
    }
    if (x === null || x === undefined) { return 1; }  // missing values last, either way
    if (y === null || y === undefined) { return -1; }
    var c = x < y ? -1 : x > y ? 1 : (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    return state.desc ? -c : c;
  }
  function keep(r) {
    if (state.workspace && r.workspace !== state.workspace) { return false; }
    // A session is kept when its [start, end] meets the chosen days.
    if (state.since && day(r.last_seen || r.first_seen) < state.since) { return false; }
    if (state.until && day(r.first_seen || r.last_seen) > state.until) { return false; }
    if (state.search && String(r.id).toLowerCase().indexOf(state.search.toLowerCase()) < 0) {
      return false;
    }
    return true;
  }

  var head = document.getElementById("head");
  COLUMNS.forEach(function (c) {
    var th = el("th", c[2] ? "num" : null);
    th.dataset.key = c[0];
    var b = el("button", null, c[1]);
    b.type = "button";
    b.addEventListener("click", function () {
      if (state.sort === c[0]) { state.desc = !state.desc; } else {
        state.sort = c[0]; state.desc = c[2] || c[0] === "first_seen";
      }
      render();
    });
    th.appendChild(b);
    head.appendChild(th);
  });

  var spaces = {};
  all.forEach(function (r) { if (r.workspace) { spaces[r.workspace] = true; } });
  var select = document.getElementById("workspace");
  Object.keys(spaces).sort().forEach(function (w) {
    var o = el("option", null, w);
    o.value = w;
    select.appendChild(o);
  });

  function row(r) {
    var tr = el("tr");
    tr.appendChild(el("td", null, r.start));
    var td = el("td");
    var a = el("a", null, r.id);
    a.href = r.href;
    td.appendChild(a);
    tr.appendChild(td);
    var ws = el("td", "ws", r.workspace || "");
    ws.title = r.workspace || "";
    tr.appendChild(ws);
    tr.appendChild(el("td", "num", num(r.threads)));
    tr.appendChild(el("td", "num", num(r.subagents)));
    tr.appendChild(el("td", "num", num(r.messages)));
    tr.appendChild(el("td", "num", num(r.tokens)));
    var c = el("td", "num" + (r.cost_usd === null ? " unpriced" : ""), cost(r));
    if (r.unpriced_models.length) { c.title = "no price for " + r.unpriced_models.join(", "); }
    tr.appendChild(c);
    return tr;
  }

  var body = document.getElementById("rows");
  function render() {
    var shown = all.filter(keep).sort(compare);
    var frag = document.createDocumentFragment();
    shown.forEach(function (r) { frag.appendChild(row(r)); });
    body.replaceChildren(frag);
    Array.prototype.forEach.call(head.children, function (th) {
      th.setAttribute("aria-sort", th.dataset.key === state.sort
        ? (state.desc ? "descending" : "ascending") : "none");
    });
    var tokens = shown.reduce(function (m, r) { return m + (r.tokens || 0); }, 0);
    var priced = shown.reduce(function (m, r) { return m + (r.priced_usd || 0); }, 0);
    var unknown = shown.some(function (r) { return r.cost_usd === null; });
    document.getElementById("shown").textContent = shown.length + " of " + all.length +
      " sessions · " + num(tokens) + " tokens · " + usd(priced) + (unknown ? " + unpriced" : "");
    writeHash();
  }

  var facts = document.getElementById("facts");
  [["sessions", all.length], ["workspaces", Object.keys(spaces).length],
   ["first", stamp(all.length ? all[0].first_seen : "")],
   ["last", stamp(all.length ? all[all.length - 1].last_seen : "")]].forEach(function (f) {
    var s = el("span", null, f[0] + " ");
    s.appendChild(el("b", null, f[1]));
    facts.appendChild(s);
  });
  document.getElementById("foot").textContent = [data.generated_by, data.source,
    "prices as of " + (data.prices.as_of || "?"), "generated " + stamp(data.generated_at)]
    .filter(Boolean).join(" · ");

  readHash();
  var inputs = {workspace: select, since: document.getElementById("since"),
    until: document.getElementById("until"), search: document.getElementById("search")};
  Object.keys(inputs).forEach(function (k) {
    inputs[k].value = state[k];
    inputs[k].addEventListener("input", function () { state[k] = inputs[k].value; render(); });
  });
  document.getElementById("filters").addEventListener("submit", function (ev) {
    ev.preventDefault();
  });
  render();
  // How long the first drawing took, for whoever measures the page (the tests do).
  document.documentElement.dataset.renderMs = (performance.now() - t0).toFixed(1);
  document.documentElement.dataset.rows = String(body.children.length);
}());
