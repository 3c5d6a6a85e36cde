// Tolerant dashboard: the live view. One websocket per page (`/ws`): a snapshot first, then frames of events.
"use strict";
(function () {
  var BUCKETS = ["≤1 ms", "≤2 ms", "≤5 ms", "≤10 ms", "≤20 ms", "≤50 ms", "≤100 ms", "≤200 ms", "≤500 ms", "≤1 s", "≤2 s", "≤5 s", ">5 s"];
  // How far back the window reaches: the hub's own bound, from the snapshot (an hour unless it says otherwise).
  var WINDOW_MS = 60 * 60 * 1000;
  // How many of each the window keeps at most: the hub's bounds, from the snapshot.
  var LIMITS = { transitions: 5000, samples: 3600, faults: 2000, annotations: 500, mode_changes: 500 };
  // Per-endpoint latency comes from the load driver's per-second figures (samples with `endpoints`).
  var LATENCY_PENDING = "per-endpoint latency appears while a run drives load";
  var model = { transitions: [], samples: [], faults: [], activeFaults: {}, notes: [], breakers: {}, progress: null, opens: 0, warmupOpens: 0, frame: 0,
    board: null, modeChanges: [] };
  var status = window.__tolerant = { connected: false, frames: 0, snapshots: 0, breakers: {}, lanes: [], laneKinds: {}, phase: null, modes: {} };

  // The page's zoom: `zoom.range` is the time range dragged across a chart (every chart shows it), or null.
  var zoom = Charts.pageZoom(status, function () { draw(); });

  var TERMINAL = ["finished", "aborted", "interrupted", "start_failed"];

  function describeFault(f) {
    return f.fault_id + ": " + (f.kind || "fault") + (f.detail ? " " + f.detail : "") + " at " + Math.round(f.rate * 100) + " % on " + f.target +
      (f.matches ? ", " + f.matches : "");
  }

  function transitionLine(t) {
    return Charts.clock(t.at_ms) + " " + t.breaker + " " + t.from.replace("_", "-") + " → " + t.to.replace("_", "-") + " (" + t.reason + (t.shadow ? ", shadow" : "") + ")";
  }

  // A fault change as the events list says it: a removal or an expiry names the fault it ended (as it was
  // last put), not "fault at 0 %". `earlier`: the fault changes before it.
  function faultLine(f, earlier) {
    var on = (f.event === "applied" || f.event === "renewed") && f.rate > 0;
    var what = "";
    if (on) { what = " " + describeFault(f); }
    else if (f.fault_id) {
      var put = null;
      for (var i = earlier.length - 1; i >= 0; i--) {
        var e = earlier[i];
        if (e.fault_id === f.fault_id && (e.event === "applied" || e.event === "renewed") && e.rate > 0) { put = e; break; }
      }
      what = " " + (put ? describeFault(put) : f.fault_id + (f.kind ? ": " + f.kind : ""));
    }
    return Charts.clock(f.at_ms) + " fault " + f.event + what;
  }

  function eventLines(state) {
    var lines = [];
    (state.transitions || []).forEach(function (t) { lines.push([t.at_ms, transitionLine(t)]); });
    (state.faults || []).forEach(function (f, i, all) { lines.push([f.at_ms, faultLine(f, all.slice(0, i))]); });
    (state.annotations || []).forEach(function (n) { lines.push([n.at_ms, Charts.clock(n.at_ms) + " note: " + n.text]); });
    (state.experiment_changes || []).forEach(function (e) { lines.push([e.at_ms, Charts.clock(e.at_ms) + " experiment " + e.experiment_id + " " + e.status]); });
    (state.mode_changes || []).forEach(function (m) { lines.push([m.at_ms, Charts.clock(m.at_ms) + " " + m.breaker + " mode " + m.from + " → " + m.to]); });
    lines.sort(function (a, b) { return a[0] - b[0]; });
    return lines.map(function (l) { return l[1]; });
  }

  function resetFromSnapshot(state) {
    if (state.window_ms) { WINDOW_MS = state.window_ms; }
    if (state.history_limits) { LIMITS = state.history_limits; }
    var list = document.getElementById("events");
    if (list) { list.innerHTML = ""; eventLines(state).slice(-100).forEach(addEventLine); }
    model.board = state.board || null;
    model.load = state.load || null;
    model.containers = state.containers || null;
    model.workers = state.workers || null;
    model.modeChanges = state.mode_changes || [];
    model.transitions = state.transitions || [];
    model.samples = state.samples || [];
    model.faults = state.faults || [];
    model.activeFaults = state.active_faults || {};
    model.notes = state.annotations || [];
    model.breakers = state.breakers || {};
    model.progress = state.progress || null;
    model.opens = state.opens || 0;
    model.warmupOpens = state.warmup_opens || 0;
  }

  function sameRun(a, b) { return a && b && a.experiment_id === b.experiment_id && a.run === b.run; }

  function apply(event) {
    switch (event.type) {
      case "transition":
        model.transitions.push(event);
        // As the hub and the results count them: after the run's warmup, shadow ones included, a forced-open
        // mode's not (the operator opened it; nothing tripped).
        if (event.to === "open" && event.reason !== "forced") {
          var p = model.progress;
          if (p && p.phase === "running" && p.measured_from_ms && event.at_ms < p.measured_from_ms) { model.warmupOpens += 1; } else { model.opens += 1; }
        }
        model.breakers[event.breaker] = { service: event.service, state: event.to, since_ms: event.at_ms, shadow: event.shadow, source: event.source || null };
        break;
      case "sample": model.samples.push(event); break;
      case "progress":
        // A new run counts its own opens; the window keeps what happened before it, as the hub does.
        if (!sameRun(model.progress, event)) { model.opens = 0; model.warmupOpens = 0; }
        model.progress = event; break;
      case "fault":
        model.faults.push(event);
        if (event.event === "halted") { model.activeFaults = {}; }
        else if ((event.event === "applied" || event.event === "renewed") && event.rate > 0) { model.activeFaults[event.fault_id] = event; }
        else { delete model.activeFaults[event.fault_id]; }
        break;
      case "annotation": model.notes.push(event); addEventLine(Charts.clock(event.at_ms) + " note: " + event.text); break;
      case "experiment":
        if (model.progress && model.progress.experiment_id === event.experiment_id && TERMINAL.indexOf(event.status) >= 0) {
          model.progress.phase = event.status; model.progress.ends_at_ms = null;
        }
        addEventLine(Charts.clock(event.at_ms) + " experiment " + event.experiment_id + " " + event.status); break;
      case "breakers":
        model.board = event;
        event.breakers.forEach(function (tile) {
          var known = model.breakers[tile.name];
          if (!known || known.state !== tile.state) { model.breakers[tile.name] = { service: tile.service, state: tile.state, since_ms: event.at_ms, shadow: false, source: known ? known.source : null }; }
        });
        break;
      case "containers": model.containers = event; break;
      case "workers": model.workers = event; break;
      case "load":
        model.load = event;
        addEventLine(Charts.clock(event.at_ms) + (event.users ? " load on: " + event.users + " users" : " load stopped"));
        break;
      case "mode":
        model.modeChanges.push(event);
        addEventLine(Charts.clock(event.at_ms) + " " + event.breaker + " mode " + event.from + " → " + event.to);
        break;
    }
    if (event.type === "transition") { addEventLine(transitionLine(event)); }
    if (event.type === "fault") { addEventLine(faultLine(event, model.faults.slice(0, -1))); }
  }

  // Drops what is older than the window behind `now`, and the oldest beyond the hub's counts (the hub drops
  // the same from its snapshot).
  function age(now) {
    var cutoff = now - WINDOW_MS, keep = function (e) { return e.at_ms >= cutoff; };
    var limit = { transitions: LIMITS.transitions, samples: LIMITS.samples, faults: LIMITS.faults, notes: LIMITS.annotations, modeChanges: LIMITS.mode_changes };
    Object.keys(limit).forEach(function (key) {
      if (model[key].length && model[key][0].at_ms < cutoff) { model[key] = model[key].filter(keep); }
      if (model[key].length > limit[key]) { model[key] = model[key].slice(model[key].length - limit[key]); }
    });
  }

  function addEventLine(text) {
    var list = document.getElementById("events");
    if (!list) { return; }
    var item = document.createElement("li"); item.textContent = text;
    list.insertBefore(item, list.firstChild);
    while (list.children.length > 100) { list.removeChild(list.lastChild); }
  }

  // The time range every chart shows (the page's range picker): the run from the put of its fault (between
  // runs: everything the window holds), the last 5, 15 or 60 minutes, or a chosen absolute range; a range
  // dragged across a chart wins over all of them.
  function windowBounds() {
    if (zoom.range) { return zoom.range; }
    var now = Date.now(), picker = document.getElementById("range");
    var choice = picker ? picker.value : "run";
    var absolute = document.getElementById("range-absolute");
    if (absolute) { absolute.hidden = choice !== "absolute"; }
    status.range = choice;
    if (choice === "absolute") {
      var from = localTime("range-from"), to = localTime("range-to");
      if (from !== null && to !== null && to > from) { return [from, to]; }
      choice = "run";
    }
    var running = model.progress && TERMINAL.indexOf(model.progress.phase) < 0;
    var start;
    if (choice !== "run") {
      start = now - parseInt(choice, 10);
    } else if (running) {
      start = model.progress.started_at_ms;
      // The run's own fault was put just before it reported itself started: the range shows the put.
      Object.keys(model.activeFaults).forEach(function (id) {
        var put = model.faults.find(function (f) { return f.fault_id === id && f.event === "applied"; });
        if (put && put.at_ms < start && start - put.at_ms < 60000) { start = put.at_ms; }
      });
    } else {
      start = now - 60000;
      [model.transitions[0], model.faults[0], model.samples[0], model.modeChanges[0]].forEach(function (e) { if (e && e.at_ms < start) { start = e.at_ms; } });
    }
    start = Math.max(start, now - WINDOW_MS);
    return [start, Math.max(now, start + 1000)];
  }

  // A `datetime-local` input's time as Unix ms, or null when empty or unreadable.
  function localTime(id) {
    var input = document.getElementById(id);
    if (!input || !input.value) { return null; }
    var ms = new Date(input.value).getTime();
    return isNaN(ms) ? null : ms;
  }

  // `ms` as a `datetime-local` input's value, in local time to the second.
  function localValue(ms) {
    var d = new Date(ms), two = function (n) { return (n < 10 ? "0" : "") + n; };
    return d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + "T" + two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds());
  }

  function tileOf(name) {
    return model.board ? model.board.breakers.find(function (t) { return t.name === name; }) : null;
  }

  function timelineRows(t0, t1) {
    return Charts.laneRows(model.transitions, model.board ? model.board.breakers : [], model.breakers, t0, t1, model.modeChanges);
  }

  function faultIntervals(t0, t1) {
    return Charts.faultIntervals(model.faults, model.activeFaults, t0, t1, describeFault);
  }

  function draw() {
    age(Date.now());
    var bounds = windowBounds(), t0 = bounds[0], t1 = bounds[1];
    var rows = timelineRows(t0, t1);
    var spans = faultIntervals(t0, t1);
    // What the window holds, for a person's tests: the lanes' changes and the fault spans as drawn.
    status.window = { from: t0, to: t1, transitions: model.transitions.map(function (t) { return { breaker: t.breaker, to: t.to, at_ms: t.at_ms, shadow: t.shadow, reason: t.reason }; }),
      faults: spans.map(function (f) { return { from: f.from, to: f.to, text: f.text }; }), samples: model.samples.length,
      firstSample: model.samples.length ? model.samples[0].at_ms : null };
    var timeline = document.getElementById("timeline");
    if (timeline) {
      Charts.timeline(timeline, rows, spans,
        model.notes.map(function (n) { return { at: n.at_ms, text: n.text }; }), t0, t1,
        model.modeChanges.map(function (m) { return { at: m.at_ms, name: m.breaker, text: "mode " + m.from + " → " + m.to }; }));
    }
    status.lanes = rows.map(function (r) { return r.name; });
    status.laneKinds = {};
    rows.forEach(function (r) { var last = r.segments[r.segments.length - 1]; status.laneKinds[r.name] = last.kind === "disabled" ? "disabled" : last.state === "open" ? last.kind : last.state; });
    drawTiles(rows);
    drawActiveFaults();
    drawContainers();
    drawWorkers();
    status.activeFaults = Object.keys(model.activeFaults).length;
    status.notes = model.notes.length;
    status.breakers = {};
    Object.keys(model.breakers).forEach(function (name) { status.breakers[name] = model.breakers[name].state; });
    // Each breaker reads as what it is, on its chip, badge and tile alike: "would open" (shadow), "forced open"
    // (its mode), "disabled", or its state.
    status.chips = {};
    rows.forEach(function (row) { status.chips[row.name] = Charts.stateLook(row).text; });
    var list = document.getElementById("breaker-list");
    if (list) {
      list.innerHTML = "";
      rows.forEach(function (row) {
        if (!model.breakers[row.name]) { return; }
        var look = Charts.stateLook(row);
        var item = document.createElement("li");
        item.className = look.look; item.dataset.breaker = row.name; item.dataset.look = look.look;
        item.textContent = row.name + ": " + look.text;
        list.appendChild(item);
      });
    }
    var running = model.progress && TERMINAL.indexOf(model.progress.phase) < 0;
    // What the running experiment's targets cannot measure (the report's statements): said, not shown as 0.
    var unmeasured = running && model.progress.not_measured ? model.progress.not_measured : [];
    var opensUnmeasured = running && model.progress.opens_not_measured;
    var opens = document.getElementById("opens");
    if (opens) {
      opens.textContent = opensUnmeasured ? "not measured" : String(model.opens);
      opens.classList.toggle("unmeasured", !!opensUnmeasured);
    }
    var notice = document.getElementById("not-measured");
    if (notice && notice.dataset.lines !== unmeasured.join("\n")) {
      notice.dataset.lines = unmeasured.join("\n");
      notice.hidden = !unmeasured.length;
      var items = document.getElementById("not-measured-lines");
      items.innerHTML = "";
      unmeasured.forEach(function (line) {
        var item = document.createElement("li"); item.textContent = line; items.appendChild(item);
      });
    }
    var warmupOpens = document.getElementById("warmup-opens");
    if (warmupOpens) { warmupOpens.textContent = model.warmupOpens ? "+" + model.warmupOpens + " in warmup" : ""; }
    status.opens = model.opens; status.warmupOpens = model.warmupOpens;
    var progress = document.getElementById("progress");
    var p = model.progress;
    status.notMeasured = unmeasured;
    // During a run's warmup the phase reads so (its opens are counted apart).
    var phase = p ? (p.phase === "running" && p.measured_from_ms && Date.now() < p.measured_from_ms ? "warmup" : p.phase) : null;
    status.phase = phase;
    var faults = Object.keys(model.activeFaults).length;
    var load = model.load && model.load.users ? model.load : null;
    var loadText = load ? "load " + load.users + " users (think " + load.think_min_ms + "–" + load.think_max_ms + " ms)" : "no load";
    status.loadUsers = load ? load.users : 0;
    var last = model.samples.length ? model.samples[model.samples.length - 1] : null;
    status.lastOk = last ? last.outcomes.ok : 0;
    var loadState = document.getElementById("load-state");
    if (loadState) { loadState.textContent = load ? "Load on: " + load.users + " users, think " + load.think_min_ms + "–" + load.think_max_ms + " ms, since " + Charts.clock(load.at_ms) + "." : "Load is off."; }
    var headline;
    if (running) {
      headline = "Experiment run: " + p.experiment + " · run " + p.run + " of " + p.runs + " · " + p.condition + " · round " + p.round + " · " + phase;
    } else if (faults || load) {
      headline = "Game day (no experiment): " + faults + " fault" + (faults === 1 ? "" : "s") + " active · " + loadText +
        (p ? " · last experiment " + p.experiment + " " + p.phase : "");
    } else {
      headline = p ? "No experiment running · " + p.experiment + " " + p.phase + " (run " + p.run + " of " + p.runs + ")" : "No experiment running, no fault active.";
    }
    status.headline = headline;
    if (progress) { progress.textContent = headline; }
    drawSamples(t0, t1);
  }

  function drawSamples(t0, t1) {
    var samples = model.samples.filter(function (s) { return s.at_ms >= t0 && s.at_ms <= t1 + 1000; });
    if (!document.getElementById("outcomes")) { return; }
    var logBox = document.getElementById("p95-log");
    var endpoints = Charts.samplePanels(samples, t0, t1, {
      outcomes: "outcomes", p95: "p95", legend: "p95-legend", cart: "cart", log: !!(logBox && logBox.checked), empty: LATENCY_PENDING
    });
    var names = Object.keys(endpoints).sort();
    var histogram = document.getElementById("histogram");
    var picker = document.getElementById("histogram-endpoint");
    if (histogram && picker) {
      var known = Array.prototype.map.call(picker.options, function (o) { return o.value; });
      if (names.join("|") !== known.join("|")) {
        var chosen = picker.value;
        picker.innerHTML = names.map(function (name) { return "<option>" + escapeHtml(name) + "</option>"; }).join("");
        if (names.indexOf(chosen) >= 0) { picker.value = chosen; } else if (names.indexOf("POST /cart/checkout") >= 0) { picker.value = "POST /cart/checkout"; }
      }
      var name = picker.value;
      if (name && endpoints[name]) { Charts.histogram(histogram, BUCKETS, endpoints[name].buckets, name); }
      else { Charts.grouped(histogram, BUCKETS, [], LATENCY_PENDING); }
      status.histogramP95 = histogram.__p95 || null;
    }

    drawEndpointTable(samples);
    var last = samples.length ? samples[samples.length - 1] : null;
    if (document.getElementById("pools")) Charts.occupancy(document.getElementById("pools"), last ? last.pools.map(function (p) {
      return { label: p.service, value: p.in_flight, max: p.capacity, queued: p.queued };
    }) : []);
  }

  // Locust-like: per endpoint, its requests by outcome over the range (they add up to the outcomes chart's),
  // and the last second's ok and failed latency and rates.
  function drawEndpointTable(samples) {
    var table = document.getElementById("endpoints");
    var rows = {}, totals = { requests: 0, failures: 0, rejections: 0, timeouts: 0 };
    samples.forEach(function (s) {
      var o = s.outcomes;
      totals.requests += o.ok + o.failed + o.rejected + o.timeout + o.connection_error + o.client_error;
      totals.failures += o.failed + o.connection_error; totals.rejections += o.rejected; totals.timeouts += o.timeout;
      s.endpoints.forEach(function (e) {
        var row = rows[e.name] || (rows[e.name] = { requests: 0, failures: 0, rejections: 0, timeouts: 0, last: null, lastOk: null, lastFailed: null });
        var c = e.outcomes;
        if (!c) { return; }
        row.requests += c.ok + c.failed + c.rejected + c.timeout + c.connection_error + c.client_error;
        row.failures += c.failed + c.connection_error; row.rejections += c.rejected; row.timeouts += c.timeout;
        row.last = c;
        if (e.ok_p95_us !== null && e.ok_p95_us !== undefined) { row.lastOk = e; }
        if (e.failed_p95_us !== null && e.failed_p95_us !== undefined) { row.lastFailed = e; }
      });
    });
    status.endpointTable = rows; status.outcomeTotals = totals;
    if (!table) { return; }
    var names = Object.keys(rows).sort();
    var ms = function (us) { return us === null || us === undefined ? "–" : (us >= 100000 ? Math.round(us / 1000) : (us / 1000).toPrecision(2)) + " ms"; };
    var body = table.querySelector("tbody");
    if (!names.length) { body.innerHTML = '<tr><td colspan="11" class="muted">Appears while load runs.</td></tr>'; return; }
    body.innerHTML = names.map(function (name) {
      var r = rows[name], c = r.last || { ok: 0, failed: 0, rejected: 0, timeout: 0, connection_error: 0, client_error: 0 };
      var perSecond = c.ok + c.failed + c.rejected + c.timeout + c.connection_error + c.client_error;
      var bad = r.failures + r.rejections + r.timeouts;
      return '<tr data-endpoint="' + escapeHtml(name) + '"' + (bad ? ' class="failing"' : "") + "><td>" + escapeHtml(name) + "</td><td>" + r.requests +
        "</td><td" + (r.failures ? ' class="bad"' : "") + ">" + r.failures + "</td><td" + (r.rejections ? ' class="bad"' : "") + ">" + r.rejections +
        "</td><td>" + r.timeouts + "</td><td>" + ms(r.lastOk && r.lastOk.ok_p50_us) + "</td><td>" + ms(r.lastOk && r.lastOk.ok_p95_us) +
        "</td><td>" + ms(r.lastFailed && r.lastFailed.failed_p50_us) + "</td><td>" + ms(r.lastFailed && r.lastFailed.failed_p95_us) +
        "</td><td>" + perSecond + "</td><td>" + (perSecond - c.ok - c.client_error) + "</td></tr>";
    }).join("") + '<tr class="total"><td>all endpoints</td><td>' + totals.requests + "</td><td>" + totals.failures + "</td><td>" + totals.rejections +
      "</td><td>" + totals.timeouts + '</td><td colspan="6"></td></tr>';
  }

  function pct(x) { return x === null || x === undefined ? "–" : (x * 100).toFixed(x >= 0.1 || x === 0 ? 0 : 1) + " %"; }

  // Hystrix-style tiles, grouped by caller: mode, config, counters, failure rate over the window.
  function drawTiles(rows) {
    var box = document.getElementById("tiles");
    if (!box) { return; }
    var html = [], group = null;
    status.sources = {};
    status.tileRates = {};
    rows.forEach(function (row) {
      var tile = model.board ? tileOf(row.name) : null;
      if (!tile && !row.source) { return; }
      if (row.group !== group) { if (group !== null) { html.push("</div>"); } group = row.group; html.push('<h3 class="tile-group">' + escapeHtml(group) + '</h3><div class="tile-row">'); }
      var shown = Charts.stateLook(row), look = shown.look;
      var badge = row.source ? '<span class="badge source" title="' + escapeHtml(row.source) + '">' + escapeHtml(row.badge) + "</span>" : "";
      if (row.source) { status.sources[row.name] = row.badge; }
      if (!tile) {
        // A foreign breaker: only its state is seen from outside (a scrape or a push), not its config or counts.
        html.push('<div class="tile ' + look + '" data-breaker="' + escapeHtml(row.name) + '" data-state="' + look + '" data-source="' + escapeHtml(row.badge) + '">' +
          '<div class="tile-head"><b>' + escapeHtml(row.label) + '</b>' + badge + '<span class="badge">' + escapeHtml(shown.text) + "</span></div>" +
          '<div class="tile-config muted">seen through ' + escapeHtml(row.source) + "</div>" +
          '<div class="tile-counts muted">mode, config and call counts are the library\'s own, not visible here</div></div>');
        return;
      }
      var cfg = tile.config, w = tile.window;
      // What its callers got: a rejected call is not served either (calls counts the admitted ones).
      var asked = w.calls + w.rejected, notServed = asked ? (w.failures + w.rejected) / asked : null;
      status.tileRates[tile.name] = notServed;
      html.push('<div class="tile ' + look + ' mode-' + tile.mode + '" data-breaker="' + escapeHtml(tile.name) + '" data-state="' + look + '">' +
        '<div class="tile-head"><b>' + escapeHtml(row.label) + '</b><span class="badge">' + escapeHtml(shown.text) + "</span></div>" +
        '<div class="tile-mode">mode <b>' + tile.mode + "</b></div>" +
        (notServed === null ? '<div class="tile-rate idle muted">no calls in the last 10 s</div>'
          : '<div class="tile-rate">' + pct(notServed) + ' <span class="muted">' + (w.rejected ? "failed or rejected" : "failing") + ', last 10 s</span></div>') +
        '<div class="tile-counts">' + tile.window.calls + " calls · " + tile.window.failures + " failed · " + tile.window.rejected + " rejected <span class=\"muted\">(10 s)</span></div>" +
        '<div class="tile-counts muted">since start: ' + tile.calls + " calls, " + tile.failures + " failed, " + tile.rejected + " rejected, " + tile.opens + " opens</div>" +
        (tile.mode === "disabled" ? '<div class="tile-config">disabled: admits every call, detects nothing</div>'
          : tile.mode === "forced-open" ? '<div class="tile-config">forced open: rejects every call until its mode changes</div>'
          : cfg ? '<div class="tile-config">' + (tile.mode === "shadow" ? "would trip" : "trips") + " on " + escapeHtml(cfg.detector) + "<br>open " + escapeHtml(cfg.open_window) + " · " + escapeHtml(cfg.probes) +
            (tile.mode === "shadow" ? "<br>shadow: never rejects" : "") + "</div>" : "") +
        (tile.open_until_ms && look === "open" ? '<div class="tile-config">half-open in ' + Math.max(0, Math.round((tile.open_until_ms - Date.now()) / 1000)) + " s</div>" : "") +
        "</div>");
    });
    if (group !== null) { html.push("</div>"); }
    box.innerHTML = html.join("");
    status.modes = {};
    (model.board ? model.board.breakers : []).forEach(function (t) { status.modes[t.name] = t.mode; });
  }

  // The faults in force: kind, rate, match and the lease counting down.
  function drawActiveFaults() {
    var box = document.getElementById("active-faults");
    if (!box) { return; }
    var ids = Object.keys(model.activeFaults).sort();
    if (!ids.length) { box.innerHTML = '<li class="muted">No fault is active.</li>'; return; }
    // A container fault can be undone from here when the page holds a CSRF token (logged in).
    var csrf = document.querySelector('meta[name="csrf-token"]');
    box.innerHTML = ids.map(function (id) {
      var f = model.activeFaults[id];
      var left = f.expires_at_ms ? Math.max(0, Math.round((f.expires_at_ms - Date.now()) / 1000)) : null;
      var container = /^container-(\d+)$/.exec(id);
      var undo = container && csrf && csrf.content ?
        ' <form method="post" action="/ui/container-fault/clear" class="inline"><input type="hidden" name="csrf" value="' + escapeHtml(csrf.content) +
        '"><input type="hidden" name="id" value="' + container[1] + '"><button type="submit" class="secondary small-button">Undo</button></form>' : "";
      return '<li data-fault="' + escapeHtml(id) + '"><b>' + escapeHtml(describeFault(f)) + "</b>" +
        (left !== null ? ' <span class="lease">lease ' + left + " s left</span>" : "") + undo + "</li>";
    }).join("");
  }

  function bytes(value) {
    if (value >= 1048576) { return (value / 1048576).toFixed(1) + " MiB"; }
    if (value >= 1024) { return (value / 1024).toFixed(1) + " KiB"; }
    return Math.round(value) + " B";
  }

  // Each container's last second (the compose project on the engine the dashboard reaches; hidden without).
  function drawContainers() {
    var card = document.getElementById("containers-card"), stats = model.containers;
    if (!card) { return; }
    card.hidden = !stats;
    status.containers = stats ? stats.containers.length : 0;
    if (!stats) { return; }
    card.querySelector("tbody").innerHTML = stats.containers.map(function (c) {
      return '<tr data-container="' + escapeHtml(c.replica) + '"><td>' + escapeHtml(c.replica) + "</td><td>" + c.cpu_percent.toFixed(1) +
        "</td><td>" + bytes(c.memory_bytes) + "</td><td>" + bytes(c.rx_bytes_per_s) + "/s</td><td>" + bytes(c.tx_bytes_per_s) +
        "/s</td><td>" + c.modelled_watts.toFixed(2) + " W</td></tr>";
    }).join("");
    document.getElementById("containers-at").textContent = "The second to " + Charts.clock(stats.at_ms) +
      ", from the Docker Engine's stats; power is modelled (CPU share of the machine's modelled power).";
  }

  // Where the running (or last) experiment's users run: its load workers, or in-process (hidden before any).
  function drawWorkers() {
    var card = document.getElementById("workers-card"), panel = model.workers;
    if (!card) { return; }
    card.hidden = !panel;
    status.workers = panel && panel.pool ? panel.pool.workers.map(function (w) { return w.name + (w.lost_from_second === null ? "" : " lost"); }) : [];
    if (!panel) { return; }
    var summary = document.getElementById("workers-summary"), table = document.getElementById("workers");
    var at = document.getElementById("workers-at"), pool = panel.pool;
    var ended = !model.progress || model.progress.experiment_id !== panel.experiment_id || TERMINAL.indexOf(model.progress.phase) >= 0;
    table.hidden = !pool;
    if (!pool) {
      summary.textContent = "In-process: experiment " + panel.experiment_id + " runs its virtual users in the dashboard's own process (no [load] workers).";
      at.textContent = "";
      return;
    }
    var lost = pool.workers.filter(function (w) { return w.lost_from_second !== null; });
    summary.innerHTML = "Experiment " + panel.experiment_id + ": <b>" + pool.connected + " of " + pool.wanted + "</b> wanted workers connected at <code>" +
      escapeHtml(pool.url) + "</code>" + (lost.length ? ' — <b class="lost">' + lost.length + (ended ? " lost: the run was stored degraded" : " lost: the run is degraded") + "</b>" : "") +
      (ended ? " (the experiment has ended)" : "");
    table.querySelector("tbody").innerHTML = pool.workers.map(function (w) {
      var isLost = w.lost_from_second !== null;
      return '<tr data-worker="' + escapeHtml(w.name) + '"' + (isLost ? ' class="lost"' : "") + "><td>" + escapeHtml(w.name) + "</td><td>" + w.capacity +
        "</td><td>" + w.users + "</td><td>" + (isLost ? "–" : w.requests_per_second) + "</td><td>" + (isLost ? "–" : w.lag_seconds) + "</td><td>" +
        (isLost ? "lost: its " + w.users + " users missing from second " + w.lost_from_second : "connected") + "</td></tr>";
    }).join("") + (pool.workers.length ? "" : '<tr><td colspan="6" class="muted">No worker connected yet.</td></tr>');
    at.textContent = "As of " + Charts.clock(panel.at_ms) + ": users of the run in progress (0 between runs), requests in the last second each sent, " +
      "and how many seconds its last record is behind the run.";
  }

  function escapeHtml(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  var scheduled = false;
  function redrawSoon() {
    if (scheduled) { return; }
    scheduled = true;
    setTimeout(function () { scheduled = false; draw(); }, 150);
  }

  function connect() {
    var conn = document.getElementById("conn");
    var socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
    socket.onopen = function () { status.connected = true; if (conn) { conn.textContent = "live"; conn.className = "conn up"; } };
    socket.onmessage = function (message) {
      var frame = JSON.parse(message.data);
      status.frames += 1;
      if (frame.type === "snapshot") { status.snapshots += 1; resetFromSnapshot(frame.state); }
      else { frame.events.forEach(apply); }
      model.frame = frame.frame;
      redrawSoon();
    };
    socket.onclose = function () {
      status.connected = false;
      if (conn) { conn.textContent = "reconnecting…"; conn.className = "conn down"; }
      setTimeout(connect, 1000);
    };
  }

  ["range", "range-from", "range-to", "p95-log", "histogram-endpoint"].forEach(function (id) {
    var control = document.getElementById(id);
    if (control) { control.addEventListener("change", draw); }
  });
  // Choosing an absolute range starts from the last 15 minutes, to be narrowed.
  var rangePicker = document.getElementById("range");
  if (rangePicker) {
    rangePicker.addEventListener("change", function () {
      var from = document.getElementById("range-from"), to = document.getElementById("range-to");
      if (rangePicker.value === "absolute" && from && to && !from.value && !to.value) {
        var now = Date.now(); from.value = localValue(now - 900000); to.value = localValue(now); draw();
      }
    });
  }
  connect();
  draw();
  setInterval(draw, 1000);
  window.addEventListener("resize", draw);
})();
