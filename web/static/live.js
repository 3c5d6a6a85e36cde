// Tolerant dashboard: the live view. One websocket per page (`/ws`): a snapshot first, then frames of events.
"use strict";
(function () {
  var BUCKETS_MS = ["≤1", "≤2", "≤5", "≤10", "≤20", "≤50", "≤100", "≤200", "≤500", "≤1k", "≤2k", "≤5k", ">5k"];
  var WINDOW_MS = 10 * 60 * 1000;
  // Per-endpoint latency comes from the load driver's per-second figures (samples with `endpoints`).
  var LATENCY_PENDING = "per-endpoint latency appears while a run drives load";
  var model = { transitions: [], samples: [], faults: [], activeFaults: {}, notes: [], breakers: {}, progress: null, opens: 0, frame: 0 };
  var status = window.__tolerant = { connected: false, frames: 0, snapshots: 0, breakers: {} };

  function resetFromSnapshot(state) {
    model.transitions = state.transitions || [];
    model.samples = state.samples || [];
    model.faults = state.faults || [];
    model.activeFaults = state.active_faults || {};
    model.notes = state.annotations || [];
    model.breakers = state.breakers || {};
    model.progress = state.progress || null;
    model.opens = state.opens || 0;
  }

  function sameRun(a, b) { return a && b && a.experiment_id === b.experiment_id && a.run === b.run; }

  function apply(event) {
    switch (event.type) {
      case "transition":
        model.transitions.push(event);
        if (event.to === "open" && !event.shadow) { model.opens += 1; }
        model.breakers[event.breaker] = { service: event.service, state: event.to, since_ms: event.at_ms, shadow: event.shadow };
        break;
      case "sample": model.samples.push(event); if (model.samples.length > 900) { model.samples.shift(); } break;
      case "progress":
        if (!sameRun(model.progress, event)) { model.transitions = []; model.samples = []; model.faults = []; model.opens = 0; }
        model.progress = event; break;
      case "fault":
        model.faults.push(event);
        if (event.event === "halted") { model.activeFaults = {}; }
        else if ((event.event === "applied" || event.event === "renewed") && event.rate > 0) { model.activeFaults[event.fault_id] = event; }
        else { delete model.activeFaults[event.fault_id]; }
        break;
      case "annotation": model.notes.push(event); addEventLine(Charts.clock(event.at_ms) + " note: " + event.text); break;
      case "experiment": addEventLine(Charts.clock(event.at_ms) + " experiment " + event.experiment_id + " " + event.status); break;
    }
    if (event.type === "transition") {
      addEventLine(Charts.clock(event.at_ms) + " " + event.breaker + " " + event.from + " → " + event.to + " (" + event.reason + ")");
    }
  }

  function addEventLine(text) {
    var list = document.getElementById("events");
    if (!list) { return; }
    var item = document.createElement("li"); item.textContent = text;
    list.insertBefore(item, list.firstChild);
    while (list.children.length > 100) { list.removeChild(list.lastChild); }
  }

  function windowBounds() {
    var now = Date.now();
    var start = model.progress ? model.progress.started_at_ms : now - WINDOW_MS;
    var first = model.transitions.length ? model.transitions[0].at_ms : now;
    if (!model.progress) { start = Math.max(now - WINDOW_MS, Math.min(first, now - 60000)); }
    return [Math.max(start, now - WINDOW_MS), Math.max(now, start + 1000)];
  }

  function timelineRows(t0, t1) {
    var names = Object.keys(model.breakers);
    model.transitions.forEach(function (t) { if (names.indexOf(t.breaker) < 0) { names.push(t.breaker); } });
    names.sort();
    return names.map(function (name) {
      var own = model.transitions.filter(function (t) { return t.breaker === name; });
      var segments = [], from = t0;
      var state = own.length ? own[0].from : (model.breakers[name] ? model.breakers[name].state : "closed");
      own.forEach(function (t) { segments.push({ from: from, to: t.at_ms, state: state }); from = t.at_ms; state = t.to; });
      segments.push({ from: from, to: t1, state: state });
      return { name: name, segments: segments };
    });
  }

  function faultIntervals(t0, t1) {
    var intervals = [], open = {};
    Object.keys(model.activeFaults).forEach(function (id) {
      var known = model.faults.some(function (f) { return f.fault_id === id; });
      if (!known) { open[id] = t0; }
    });
    model.faults.forEach(function (f) {
      var active = (f.event === "applied" || f.event === "renewed") && f.rate > 0;
      if (active) { if (open[f.fault_id] === undefined) { open[f.fault_id] = f.at_ms; } }
      else if (f.event === "halted") { Object.keys(open).forEach(function (id) { intervals.push({ from: open[id], to: f.at_ms }); }); open = {}; }
      else if (open[f.fault_id] !== undefined) { intervals.push({ from: open[f.fault_id], to: f.at_ms }); delete open[f.fault_id]; }
    });
    Object.keys(open).forEach(function (id) { intervals.push({ from: open[id], to: t1 }); });
    return intervals;
  }

  function draw() {
    var bounds = windowBounds(), t0 = bounds[0], t1 = bounds[1];
    var rows = timelineRows(t0, t1);
    var timeline = document.getElementById("timeline");
    if (timeline) {
      Charts.timeline(timeline, rows, faultIntervals(t0, t1),
        model.notes.map(function (n) { return { at: n.at_ms, text: n.text }; }), t0, t1);
    }
    status.activeFaults = Object.keys(model.activeFaults).length;
    status.notes = model.notes.length;
    status.breakers = {};
    Object.keys(model.breakers).forEach(function (name) { status.breakers[name] = model.breakers[name].state; });
    var list = document.getElementById("breaker-list");
    if (list) {
      list.innerHTML = "";
      Object.keys(model.breakers).sort().forEach(function (name) {
        var item = document.createElement("li");
        item.className = model.breakers[name].state; item.dataset.breaker = name;
        item.textContent = name + ": " + model.breakers[name].state.replace("_", "-");
        list.appendChild(item);
      });
    }
    var opens = document.getElementById("opens");
    if (opens) { opens.textContent = String(model.opens); }
    var progress = document.getElementById("progress");
    if (progress) {
      var p = model.progress;
      progress.textContent = p ? (p.experiment + " · run " + p.run + " of " + p.runs + " · " + p.condition +
        " · round " + p.round + " · " + p.phase) : "No experiment running.";
    }
    drawSamples(t0, t1);
  }

  function drawSamples(t0, t1) {
    var samples = model.samples.filter(function (s) { return s.at_ms >= t0; });
    var outcomes = document.getElementById("outcomes");
    if (!outcomes) { return; }
    Charts.stacked(outcomes, samples.map(function (s) {
      var o = s.outcomes;
      return { t: s.at_ms, parts: [o.ok, o.failed + o.connection_error, o.rejected, o.timeout] };
    }), ["#2e9d57", "#d64541", "#f0a202", "#555"], t0, t1);

    var endpoints = {};
    samples.forEach(function (s) {
      s.endpoints.forEach(function (e) {
        var entry = endpoints[e.name] || (endpoints[e.name] = { points: [], buckets: BUCKETS_MS.map(function () { return 0; }) });
        if (e.requests > 0) { entry.points.push([s.at_ms, e.p95_us / 1000]); }
        e.buckets.forEach(function (count, i) { entry.buckets[i] += count; });
      });
    });
    var names = Object.keys(endpoints).sort();
    Charts.lines(document.getElementById("p95"), names.map(function (name, i) {
      return { label: name, color: Charts.palette[i % Charts.palette.length], points: endpoints[name].points };
    }), t0, t1, "ms", { empty: LATENCY_PENDING });
    var legend = document.getElementById("p95-legend");
    if (legend) {
      legend.innerHTML = names.map(function (name, i) {
        return '<span class="sw" style="background:' + Charts.palette[i % Charts.palette.length] + '"></span>' + name;
      }).join(" ");
    }
    Charts.grouped(document.getElementById("histogram"), BUCKETS_MS.map(function (b) { return b + "ms"; }),
      names.map(function (name) { return { label: name, values: endpoints[name].buckets }; }), LATENCY_PENDING);

    Charts.lines(document.getElementById("cart"), [
      { label: "items", color: "#2f6fd6", points: samples.filter(function (s) { return s.cart_mean_items !== null && s.cart_mean_items !== undefined; }).map(function (s) { return [s.at_ms, s.cart_mean_items]; }) },
      { label: "/cart p95", color: "#d6742f", right: true, points: samples.filter(function (s) { return s.cart_p95_us !== null && s.cart_p95_us !== undefined; }).map(function (s) { return [s.at_ms, s.cart_p95_us / 1000]; }) }
    ], t0, t1, "items", { right: "ms" });

    var last = samples.length ? samples[samples.length - 1] : null;
    Charts.occupancy(document.getElementById("pools"), last ? last.pools.map(function (p) {
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

  connect();
  draw();
  setInterval(draw, 1000);
  window.addEventListener("resize", draw);
})();
