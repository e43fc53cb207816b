// graphkit lineage view. Draws the session held as JSON in #graphkit-data.
// Every string from the data reaches the page through textContent or as an
// attribute value, never as markup, so a transcript cannot inject HTML.
(function () {
  "use strict";

  // Indentation levels drawn, as graphkit.cli.query.DRAWN_LEVELS for `graphkit tree`.
  var DRAWN_LEVELS = 16;
  var data = JSON.parse(document.getElementById("graphkit-data").textContent);
  var threads = data.threads;
  var children = threads.map(function () { return []; });
  var roots = [];
  threads.forEach(function (t, i) {
    if (t.parent === null) { roots.push(i); } else { children[t.parent].push(i); }
  });
  var collapsed = threads.map(function () { return false; });
  var rows = [];

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function time(s) {
    var t = s ? Date.parse(s) : NaN;
    return isNaN(t) ? null : t;
  }

  function stamp(s) {
    // UTC, to the second: the same text on every machine.
    var t = time(s);
    return t === null ? "" : new Date(t).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }

  function span(ms) {
    if (ms === null || ms < 0) { return ""; }
    var s = Math.round(ms / 1000);
    if (s < 60) { return s + "s"; }
    var m = Math.floor(s / 60);
    if (m < 60) { return m + "m " + (s % 60) + "s"; }
    return Math.floor(m / 60) + "h " + (m % 60) + "m";
  }

  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
  // A cost in USD; null: a model graphkit has no price for (unknown, never zero).
  function usd(x) { return x === null || x === undefined ? "unpriced" : "$" + x.toFixed(4); }

  function descendants(i) {
    var out = [];
    var stack = children[i].slice();
    while (stack.length) {
      var j = stack.pop();
      out.push(j);
      Array.prototype.push.apply(stack, children[j]);
    }
    return out;
  }

  // -- the time scale shared by the axis and every bar -----------------------
  var starts = [], ends = [];
  threads.forEach(function (t) {
    var a = time(t.first_seen), b = time(t.last_seen);
    if (a !== null) { starts.push(a); }
    if (b !== null || a !== null) { ends.push(b !== null ? b : a); }
  });
  var t0 = starts.length ? Math.min.apply(null, starts) : null;
  var t1 = ends.length ? Math.max.apply(null, ends) : null;
  if (time(data.session.first_seen) !== null && t0 !== null) {
    t0 = Math.min(t0, time(data.session.first_seen));
  }
  if (time(data.session.last_seen) !== null && t1 !== null) {
    t1 = Math.max(t1, time(data.session.last_seen));
  }
  var width = t0 !== null && t1 !== null && t1 > t0 ? t1 - t0 : 1;
  function pct(t) { return (100 * (t - t0) / width).toFixed(3) + "%"; }
  function wide(a, b) { return (100 * Math.max(0, b - a) / width).toFixed(3) + "%"; }

  function drawAxis() {
    var axis = document.getElementById("axis");
    if (t0 === null) { axis.appendChild(el("div", "tick", "no times recorded")); return; }
    for (var k = 0; k < 4; k++) {  // the end time is in the header
      var at = t0 + (width * k) / 4;
      // The first tick is the clock time (the date is in the header); the rest offsets.
      var tick = el("div", "tick", k === 0 ? stamp(new Date(at).toISOString()).slice(11)
        : "+" + span(at - t0));
      tick.style.left = (k * 25) + "%";
      axis.appendChild(tick);
    }
  }

  // -- header and footer -------------------------------------------------------
  function fact(parent, label, value) {
    if (value === null || value === undefined || value === "") { return; }
    var f = el("span", null, label + " ");
    f.appendChild(el("b", null, value));
    parent.appendChild(f);
  }

  function drawHeader() {
    document.getElementById("session-id").textContent = data.session.id;
    var facts = document.getElementById("session-facts");
    var agents = threads.filter(function (t) { return t.parent !== null; }).length;
    var depth = threads.reduce(function (m, t) { return Math.max(m, t.depth - 1); }, 0);
    fact(facts, "threads", threads.length);
    fact(facts, "subagents / child threads", agents);
    fact(facts, "deepest", depth ? "depth " + depth : "");
    fact(facts, "messages", data.session.messages);
    if (threads.length && threads[0].subtree_cost_usd !== undefined) {
      var priced = threads.every(function (t) { return t.cost_usd !== null; });
      var total = threads.reduce(function (m, t) { return m + (t.cost_usd || 0); }, 0);
      fact(facts, "cost", priced ? usd(total) : usd(total) + " + unpriced");
    }
    if (data.index_href) {
      var back = el("a", "back", "all sessions");
      back.href = data.index_href;
      document.querySelector(".title").prepend(back);
    }
    fact(facts, "start", stamp(data.session.first_seen));
    fact(facts, "end", stamp(data.session.last_seen));
    if (t0 !== null && t1 !== null) { fact(facts, "span", span(t1 - t0)); }
    var foot = document.getElementById("foot");
    var legend = el("span", "legend");
    ["main", "subagent", "child-thread", "thread"].forEach(function (k) {
      var item = el("span", "k-" + k);
      item.appendChild(el("span", "dot"));
      item.appendChild(document.createTextNode(k));
      legend.appendChild(item);
    });
    foot.appendChild(legend);
    foot.appendChild(document.createTextNode(
      [data.generated_by, data.source, "generated " + stamp(data.generated_at)]
        .filter(Boolean).join(" · ")));
  }

  // -- one row per thread: the tree cell and its timeline bar ------------------
  function drawRows() {
    var box = document.getElementById("rows");
    // Depth first, children in order; a loop, not recursion: a chain of
    // subagents 20k deep overflows the browser's call stack.
    var order = [];
    var stack = roots.slice().reverse();
    while (stack.length) {
      var i = stack.pop();
      order.push(i);
      for (var k = children[i].length - 1; k >= 0; k--) { stack.push(children[i][k]); }
    }
    order.forEach(function (i) {
      var t = threads[i];
      var row = el("div", "row k-" + (t.kind || "thread") + (t.cycle ? " cycle" : ""));
      row.setAttribute("role", "treeitem");
      row.setAttribute("aria-level", String(t.depth));
      row.setAttribute("data-thread-id", t.id);
      row.tabIndex = 0;
      var cell = el("div", "cell-tree");
      // Guides stop at DRAWN_LEVELS as `graphkit tree`'s indentation does; a deeper
      // row says its depth. One guide per level drew 2*10^8 elements 20k deep.
      for (var d = 1; d < Math.min(t.depth, DRAWN_LEVELS + 1); d++) {
        cell.appendChild(el("span", "guide"));
      }
      var toggle = el("button", "toggle" + (children[i].length ? "" : " leaf"),
        children[i].length ? "\u25BE" : "");
      toggle.type = "button";
      toggle.setAttribute("aria-label", "collapse or expand");
      toggle.addEventListener("click", function (ev) {
        ev.stopPropagation();
        collapsed[i] = !collapsed[i];
        refresh();
      });
      cell.appendChild(toggle);
      cell.appendChild(el("span", "dot"));
      cell.appendChild(el("span", "id", t.id));
      if (t.depth - 1 > DRAWN_LEVELS) {
        cell.appendChild(el("span", "badge deep", "depth " + (t.depth - 1)));
      }
      if (t.agent_type) { cell.appendChild(el("span", "badge type", t.agent_type)); }
      if (t.model) { cell.appendChild(el("span", "badge", t.model)); }
      if (t.cycle) { cell.appendChild(el("span", "badge warn", "parent cycle")); }
      var counts = [];
      if (t.messages !== null && t.messages !== undefined) {
        counts.push(plural(t.messages, "msg"));
      }
      if (t.tokens !== null && t.tokens !== undefined) { counts.push(t.tokens + " tok"); }
      if (t.subtree_cost_usd !== undefined) {
        counts.push(usd(t.cost_usd) + (children[i].length ? " (tree " + usd(t.subtree_cost_usd) + ")" : ""));
      }
      cell.appendChild(el("span", "count", counts.join(" · ")));
      row.appendChild(cell);
      row.appendChild(drawBar(t));
      row.addEventListener("click", function () { select(i); });
      row.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(i); }
      });
      rows[i] = row;
      box.appendChild(row);
    });
  }

  function drawBar(t) {
    var cell = el("div", "cell-time");
    var a = time(t.first_seen);
    if (a === null || t0 === null) { return cell; }
    var b = time(t.last_seen);
    var bar = el("div", "bar");
    bar.style.left = pct(a);
    bar.style.width = wide(a, b !== null ? b : a);
    bar.title = stamp(t.first_seen) + (b !== null ? " \u2013 " + stamp(t.last_seen)
      + " (" + span(b - a) + ")" : "");
    if (t.parent !== null) {
      // A dashed elbow from the parent's start to this thread's start: the spawn.
      var p = time(threads[t.parent].first_seen);
      if (p !== null && p <= a) {
        var spawn = el("div", "spawn");
        spawn.style.left = pct(p);
        spawn.style.width = wide(p, a);
        cell.appendChild(spawn);
      }
    }
    cell.appendChild(bar);
    return cell;
  }

  function refresh() {
    var hidden = threads.map(function () { return false; });
    threads.forEach(function (t, i) {
      if (collapsed[i]) { descendants(i).forEach(function (j) { hidden[j] = true; }); }
    });
    threads.forEach(function (t, i) {
      rows[i].hidden = hidden[i];
      rows[i].setAttribute("aria-expanded", children[i].length ? String(!collapsed[i]) : "false");
      var toggle = rows[i].querySelector(".toggle");
      if (children[i].length) { toggle.textContent = collapsed[i] ? "\u25B8" : "\u25BE"; }
    });
  }

  // -- the details panel: lineage, facts, what it spawned, content -----------
  function ancestors(i) {
    var chain = [];
    var seen = {};
    var j = threads[i].parent;
    while (j !== null && !seen[j]) { seen[j] = true; chain.push(j); j = threads[j].parent; }
    return chain;
  }

  function crumb(list, label, i, here) {
    var li = el("li", here ? "here" : null);
    // What the item names, for scripts reading the page (e.g. the tests).
    li.setAttribute("data-" + list.id, i === null ? "Session " + data.session.id
      : "Thread " + threads[i].id);
    if (i === null || here) {
      li.textContent = label;
    } else {
      var b = el("button", null, label);
      b.type = "button";
      b.addEventListener("click", function () { select(i); });
      li.appendChild(b);
    }
    list.appendChild(li);
  }

  function describe(t) {
    return t.id + " (" + [t.kind, t.agent_type].filter(Boolean).join(", ") + ")";
  }

  function table(parent, pairs) {
    var tbl = el("table", "kv");
    pairs.forEach(function (kv) {
      if (kv[1] === null || kv[1] === undefined || kv[1] === "") { return; }
      var tr = el("tr");
      tr.appendChild(el("th", null, kv[0]));
      var v = kv[1];
      tr.appendChild(el("td", null, typeof v === "object" ? JSON.stringify(v) : v));
      tbl.appendChild(tr);
    });
    parent.appendChild(tbl);
  }

  function select(i) {
    var up = ancestors(i);
    // A lookup, not up.indexOf per row: rows times depth hung a chain 20k deep.
    var onPath = {};
    up.forEach(function (j) { onPath[j] = true; });
    rows.forEach(function (r, j) {
      r.classList.toggle("selected", j === i);
      r.classList.toggle("lineage", onPath[j] === true);
    });
    up.forEach(function (j) { collapsed[j] = false; });
    refresh();
    var t = threads[i];
    var box = document.getElementById("details");
    box.textContent = "";
    box.appendChild(el("h2", "mono", t.id));
    box.appendChild(el("h3", null, "lineage"));
    var list = el("ol", "crumbs");
    list.id = "lineage";
    crumb(list, "Session " + data.session.id, null, false);
    up.slice().reverse().forEach(function (j) { crumb(list, describe(threads[j]), j, false); });
    crumb(list, describe(t), i, true);
    box.appendChild(list);
    box.appendChild(el("h3", null, "thread"));
    var a = time(t.first_seen), b = time(t.last_seen);
    table(box, [["kind", t.kind], ["agent type", t.agent_type], ["description", t.description],
      ["model", t.model], ["messages", t.messages], ["tokens", t.tokens],
      ["cost", t.subtree_cost_usd === undefined ? "" : usd(t.cost_usd)],
      ["subtree cost", t.subtree_cost_usd === undefined ? "" : usd(t.subtree_cost_usd)],
      ["start", stamp(t.first_seen)], ["end", stamp(t.last_seen)],
      ["duration", a !== null && b !== null ? span(b - a) : ""],
      ["depth", t.depth - 1 ? "subagent depth " + (t.depth - 1) : "top level"],
      ["spawned", children[i].length ? plural(children[i].length, "thread") + " directly, "
        + descendants(i).length + " in all" : "none"]]);
    var props = Object.keys(t.props || {});
    if (props.length) {
      box.appendChild(el("h3", null, "properties"));
      table(box, props.map(function (k) { return [k, t.props[k]]; }));
    }
    if (children[i].length) {
      box.appendChild(el("h3", null, "spawned"));
      var kids = el("ol", "crumbs");
      kids.id = "spawned";
      children[i].forEach(function (j) { crumb(kids, describe(threads[j]), j, false); });
      box.appendChild(kids);
    }
    if (data.include_content) {
      box.appendChild(el("h3", null, "messages"));
      var msgs = t.content || [];
      if (!msgs.length) {
        box.appendChild(el("p", "note", data.content_found ? "no message text in this thread"
          : "this graph holds no message text (build with --granularity message "
            + "--include-content)"));
      }
      msgs.forEach(function (m) {
        var card = el("div", "msg");
        card.appendChild(el("div", "at", [stamp(m.at), m.role].filter(Boolean).join(" · ")));
        card.appendChild(el("pre", null, m.text === null ? "" : m.text));
        box.appendChild(card);
      });
    }
  }

  function setAll(value) {
    threads.forEach(function (t, i) { collapsed[i] = value && children[i].length > 0; });
    refresh();
  }

  drawHeader();
  drawAxis();
  drawRows();
  refresh();
  document.getElementById("expand-all").addEventListener("click", function () { setAll(false); });
  document.getElementById("collapse-all").addEventListener("click", function () { setAll(true); });
  // #thread=ID in the address opens that thread (a link to one subagent).
  // A fragment that is no valid escape (#thread=100%) is taken as written: decoding
  // it threw, and the page stopped half-drawn.
  var asked = (location.hash.match(/^#thread=(.*)$/) || [])[1] || "";
  var wanted = asked;
  try { wanted = decodeURIComponent(asked); } catch (e) { wanted = asked; }
  var first = threads.findIndex(function (t) { return t.id === wanted; });
  if (first < 0 && threads.length) { first = roots.length ? roots[0] : 0; }
  if (first >= 0) { select(first); }
  document.documentElement.setAttribute("data-graphkit-view", "ready");
})();
