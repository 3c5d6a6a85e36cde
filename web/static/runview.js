// Tolerant dashboard: what the live page and a replayed run both draw from a run's data, on charts.js's charts
// (one implementation): lanes from transitions, how a breaker reads now, fault spans from fault changes, and
// the per-second panels from samples of the live sample's shape. Loaded after charts.js; adds to `Charts`.
"use strict";
(function () {
  // Breakers by calling service, a scaled service's replicas in number order (`checkout`, `checkout#2`, …,
  // `checkout#10`; a plain string sort puts `checkout#2->…` before `checkout->…`), then by the rest of the name.
  function breakerOrder(a, b) {
    var key = function (name) {
      var arrow = name.indexOf("->");
      var caller = arrow < 0 ? name : name.slice(0, arrow);
      var hash = caller.indexOf("#");
      return {
        service: hash < 0 ? caller : caller.slice(0, hash),
        replica: hash < 0 ? 1 : (parseInt(caller.slice(hash + 1), 10) || 1),
        rest: arrow < 0 ? "" : name.slice(arrow)
      };
    };
    var x = key(a), y = key(b);
    if (x.service !== y.service) { return x.service < y.service ? -1 : 1; }
    if (x.replica !== y.replica) { return x.replica - y.replica; }
    return x.rest < y.rest ? -1 : (x.rest > y.rest ? 1 : 0);
  }

  // One lane per breaker of the board (every breaker, from page load; a replay has none) and per breaker seen
  // in a transition, grouped by caller. A forced-open mode's open is drawn apart from a tripped open.
  // latest: {name: {state}} (the live page's last known states; {} for a replay); modeChanges: the live
  // page's mode switches [{breaker, at_ms, to}] (a disabled breaker is drawn as disabled from its switch).
  function laneRows(transitions, tiles, latest, t0, t1, modeChanges) {
    var tileOf = function (name) { return tiles.find(function (t) { return t.name === name; }) || null; };
    var names = Object.keys(latest);
    tiles.forEach(function (t) { if (names.indexOf(t.name) < 0) { names.push(t.name); } });
    transitions.forEach(function (t) { if (names.indexOf(t.breaker) < 0) { names.push(t.breaker); } });
    names.sort(breakerOrder);
    return names.map(function (name) {
      var own = transitions.filter(function (t) { return t.breaker === name; });
      var tile = tileOf(name);
      var segments = [], from = t0, reason = "", shadow = false;
      var state = own.length ? own[0].from : (latest[name] ? latest[name].state : "closed");
      var kindOf = function (st, why, isShadow) { return isShadow ? "shadow" : (st === "open" && why === "forced") ? "forced" : "tripped"; };
      own.forEach(function (t) {
        segments.push({ from: from, to: t.at_ms, state: state, kind: kindOf(state, reason, shadow), reason: reason });
        from = t.at_ms; state = t.to; reason = t.reason; shadow = t.shadow;
      });
      if (tile && tile.mode === "forced-open" && state === "open") { reason = "forced"; }
      if (tile && !own.length) { state = tile.state; }
      if (tile && tile.mode === "shadow" && state !== "closed") { shadow = true; }
      segments.push({ from: from, to: t1, state: state, kind: kindOf(state, reason, shadow), reason: reason });
      // A disabled breaker detects nothing: every span it was disabled in (from the page's mode switches, and
      // now, from its tile) is drawn as disabled, never as a healthy closed one.
      paintDisabled(segments, disabledSpans(name, tile, modeChanges || [], t0, t1));
      var arrow = name.indexOf("->");
      // A foreign breaker (its transitions carry a source): grouped under its service, badged with the source.
      var foreign = own.filter(function (t) { return t.source; });
      var source = foreign.length ? foreign[foreign.length - 1].source : (latest[name] && latest[name].source) || null;
      var service = foreign.length ? foreign[foreign.length - 1].service : (latest[name] ? latest[name].service : null);
      return { name: name, group: arrow > 0 ? name.slice(0, arrow) : (source && service ? service : name),
        label: arrow > 0 ? "→ " + name.slice(arrow + 2) : name,
        segments: segments, mode: tile ? tile.mode : null, source: source, badge: sourceBadge(source) };
    });
  }

  // The spans [from, to] breaker `name` was disabled in between t0 and t1: from its mode switches (the mode before
  // the first one is that switch's `from`), the last one lasting while its tile still says disabled.
  function disabledSpans(name, tile, modeChanges, t0, t1) {
    var changes = modeChanges.filter(function (m) { return m.breaker === name; })
      .sort(function (a, b) { return a.at_ms - b.at_ms; });
    var spans = [], mode = changes.length ? changes[0].from : (tile ? tile.mode : null), from = t0;
    changes.forEach(function (m) {
      if (mode === "disabled") { spans.push([from, m.at_ms]); }
      mode = m.to; from = m.at_ms;
    });
    if (tile) { mode = tile.mode; }
    if (mode === "disabled") { spans.push([from, t1]); }
    return spans.filter(function (span) { return span[1] > span[0]; });
  }

  // Splits `segments` (in order, end to end) at each span's edges; what lies inside a span becomes disabled.
  function paintDisabled(segments, spans) {
    spans.forEach(function (span) {
      for (var i = 0; i < segments.length; i++) {
        var seg = segments[i];
        if (seg.to <= span[0] || seg.from >= span[1]) { continue; }
        var parts = [];
        if (seg.from < span[0]) { parts.push(Object.assign({}, seg, { to: span[0] })); }
        parts.push(Object.assign({}, seg, { from: Math.max(seg.from, span[0]), to: Math.min(seg.to, span[1]), kind: "disabled", reason: "" }));
        if (seg.to > span[1]) { parts.push(Object.assign({}, seg, { from: span[1] })); }
        segments.splice.apply(segments, [i, 1].concat(parts));
        i += parts.length - 1;
      }
    });
  }

  // How a lane's breaker reads now, on its chip, badge and tile alike: {look (a CSS class), text}.
  function stateLook(row) {
    var last = row.segments[row.segments.length - 1];
    if (last.kind === "disabled") { return { look: "disabled", text: "disabled" }; }
    if (last.state === "open") {
      if (last.kind === "forced") { return { look: "forced", text: "forced open" }; }
      if (last.kind === "shadow") { return { look: "shadow", text: "would open" }; }
      return { look: "open", text: "open" };
    }
    if (last.state === "half_open" && last.kind === "shadow") { return { look: "half_open shadow", text: "would probe (half-open)" }; }
    return { look: last.state, text: last.state.replace("_", "-") };
  }

  // The short badge of a foreign breaker's source: `prometheus:<url>` → "prometheus", `push:<library>` → the
  // library, `push` → "push"; null for the testbed's own.
  function sourceBadge(source) {
    if (!source) { return null; }
    var colon = source.indexOf(":");
    var kind = colon > 0 ? source.slice(0, colon) : source;
    return kind === "push" && colon > 0 ? source.slice(colon + 1) : kind;
  }

  // Fault bars: from each applied (or renewed) fault with a rate to its removal, expiry or a halt.
  function faultIntervals(faults, active, t0, t1, describe) {
    var intervals = [], open = {};
    Object.keys(active).forEach(function (id) {
      var known = faults.some(function (f) { return f.fault_id === id; });
      if (!known) { open[id] = t0; }
    });
    var texts = {}, expires = {};
    faults.forEach(function (f) {
      var on = (f.event === "applied" || f.event === "renewed") && f.rate > 0;
      if (on) { texts[f.fault_id] = describe(f); expires[f.fault_id] = f.expires_at_ms || null; if (open[f.fault_id] === undefined) { open[f.fault_id] = f.at_ms; } }
      else if (f.event === "halted") { Object.keys(open).forEach(function (id) { intervals.push({ from: open[id], to: f.at_ms, text: texts[id] }); }); open = {}; }
      else if (open[f.fault_id] !== undefined) { intervals.push({ from: open[f.fault_id], to: f.at_ms, text: texts[f.fault_id] }); delete open[f.fault_id]; }
    });
    // Still on at the end: to now while in force; otherwise its lease ran out when it said (no news since).
    Object.keys(open).forEach(function (id) {
      var to = t1;
      if (!active[id] && expires[id] && expires[id] < t1) { to = expires[id]; }
      intervals.push({ from: open[id], to: to, text: texts[id] || (active[id] ? describe(active[id]) : id) });
    });
    return intervals;
  }

  // Outcomes per second (stacked), p95 per endpoint (successful solid, failed or rejected dashed) and cart
  // size with /cart p95, into the canvases named by ids {outcomes, p95, legend, cart} (any may be missing);
  // returns the per-endpoint figures {name: {points, failed, buckets}} for a histogram.
  function samplePanels(samples, t0, t1, ids) {
    var byId = function (id) { return id ? document.getElementById(id) : null; };
    var outcomes = byId(ids.outcomes);
    if (outcomes) {
      Charts.stacked(outcomes, samples.map(function (s) {
        var o = s.outcomes;
        return { t: s.at_ms, parts: [o.ok, o.failed + o.connection_error, o.rejected, o.timeout] };
      }), ["#2e9d57", "#d64541", "#f0a202", "#555"], t0, t1, ["ok", "failed", "rejected", "timeout"]);
    }
    var endpoints = {}, bucketCount = 13;
    samples.forEach(function (s) {
      s.endpoints.forEach(function (e) {
        var entry = endpoints[e.name] || (endpoints[e.name] = { points: [], failed: [], buckets: [] });
        while (entry.buckets.length < bucketCount) { entry.buckets.push(0); }
        if (e.ok_p95_us !== null && e.ok_p95_us !== undefined) { entry.points.push([s.at_ms, e.ok_p95_us / 1000]); }
        if (e.failed_p95_us !== null && e.failed_p95_us !== undefined) { entry.failed.push([s.at_ms, e.failed_p95_us / 1000]); }
        e.buckets.forEach(function (count, i) { entry.buckets[i] += count; });
      });
    });
    var names = Object.keys(endpoints).sort();
    var p95 = byId(ids.p95);
    if (p95) {
      var series = [];
      names.forEach(function (name, i) {
        var color = Charts.palette[i % Charts.palette.length];
        series.push({ label: name + " ok", color: color, points: endpoints[name].points });
        series.push({ label: name + " failed/rejected", color: color, dash: true, points: endpoints[name].failed });
      });
      Charts.lines(p95, series, t0, t1, "ms", { empty: ids.empty, log: !!ids.log });
    }
    var legend = byId(ids.legend);
    if (legend) {
      legend.innerHTML = names.map(function (name, i) {
        return '<span class="sw" style="background:' + Charts.palette[i % Charts.palette.length] + '"></span>' + Charts.escapeHtml(name);
      }).join(" ") + (names.length ? ' <span class="muted">— solid: successful requests, dashed: failed or rejected</span>' : "");
    }
    var cart = byId(ids.cart);
    if (cart) {
      Charts.lines(cart, [
        { label: "items", color: "#2f6fd6", points: samples.filter(function (s) { return s.cart_mean_items !== null && s.cart_mean_items !== undefined; }).map(function (s) { return [s.at_ms, s.cart_mean_items]; }) },
        { label: "/cart p95", color: "#d6742f", right: true, points: samples.filter(function (s) { return s.cart_p95_us !== null && s.cart_p95_us !== undefined; }).map(function (s) { return [s.at_ms, s.cart_p95_us / 1000]; }) }
      ], t0, t1, "items", { right: "ms" });
    }
    return endpoints;
  }

  Charts.breakerOrder = breakerOrder;
  Charts.laneRows = laneRows;
  Charts.stateLook = stateLook;
  Charts.sourceBadge = sourceBadge;
  Charts.faultIntervals = faultIntervals;
  Charts.samplePanels = samplePanels;
})();
