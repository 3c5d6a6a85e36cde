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
  // The cards drawn from the model (panels.js).
  var panels = LivePanels(model, status, describeFault, TERMINAL);

  var escapeHtml = Charts.escapeHtml;

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
    // Per lane, the spans drawn disabled (the test reads that an earlier one stays grey after re-enabling).
    status.disabledSpans = {};
    rows.forEach(function (r) { status.disabledSpans[r.name] = r.segments.filter(function (g) { return g.kind === "disabled"; }).length; });
    rows.forEach(function (r) { var last = r.segments[r.segments.length - 1]; status.laneKinds[r.name] = last.kind === "disabled" ? "disabled" : last.state === "open" ? last.kind : last.state; });
    panels.tiles(rows);
    panels.activeFaults();
    panels.containers();
    panels.workers();
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

    panels.endpointTable(samples);
    var last = samples.length ? samples[samples.length - 1] : null;
    if (document.getElementById("pools")) Charts.occupancy(document.getElementById("pools"), last ? last.pools.map(function (p) {
      return { label: p.service, value: p.in_flight, max: p.capacity, queued: p.queued };
    }) : []);
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
