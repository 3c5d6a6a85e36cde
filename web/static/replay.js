// Tolerant dashboard: a stored run's timeline replayed on the results page, drawn by the live page's own code
// (Charts.laneRows, Charts.faultIntervals, Charts.timeline, Charts.samplePanels) from the store's JSON.
"use strict";
(function () {
  var picker = document.getElementById("replay-run");
  if (!picker) { return; }
  var status = window.__replay = { loaded: 0, run: null, lanes: [], samples: 0, transitions: 0, faults: 0, error: null, zoom: null };
  var data = null;
  // The page's zoom: `zoom.range` is the time range dragged across a chart, or null (the whole run).
  var zoom = Charts.pageZoom(status, function () { draw(); });

  function describe(f) { return f.fault_id + ": " + (f.kind || "fault") + " at " + Math.round(f.rate * 100) + " %"; }

  function draw() {
    if (!data) { return; }
    var t0 = data.started_at_ms, t1 = Math.max(data.ended_at_ms, t0 + 1000);
    if (zoom.range) { t0 = zoom.range[0]; t1 = zoom.range[1]; }
    var rows = Charts.laneRows(data.transitions, [], {}, t0, t1);
    var notes = [{ at: data.measured_from_ms, text: "warmup ends" }];
    Charts.timeline(document.getElementById("replay-timeline"), rows, Charts.faultIntervals(data.faults, {}, t0, t1, describe), notes, t0, t1, [], "no breaker changed state in this run");
    var log = document.getElementById("replay-log");
    Charts.samplePanels(data.samples, t0, t1, {
      outcomes: "replay-outcomes", p95: "replay-p95", legend: "replay-p95-legend", cart: "replay-cart",
      log: !!(log && log.checked), empty: "no latency stored for this run"
    });
    status.lanes = rows.map(function (r) { return r.name; });
  }

  function load() {
    var run = picker.value;
    if (!run) { return; }
    fetch("/api/experiments/" + picker.dataset.experiment + "/runs/" + run + "/timeline")
      .then(function (response) {
        if (!response.ok) { return response.json().then(function (body) { throw new Error(body.error || response.statusText); }); }
        return response.json();
      })
      .then(function (timeline) {
        data = timeline;
        status.run = timeline.run.id; status.samples = timeline.samples.length;
        status.transitions = timeline.transitions.length; status.faults = timeline.faults.length; status.error = null;
        var note = document.getElementById("replay-note");
        if (note) {
          note.textContent = "Run " + timeline.run.position + " · " + timeline.run.condition + " · round " + timeline.run.round + " · " +
            timeline.run.status + " · " + timeline.samples.length + " stored seconds, " + timeline.transitions.length + " transitions.";
        }
        draw();
        status.loaded += 1;
      })
      .catch(function (error) {
        status.error = String(error.message || error);
        var note = document.getElementById("replay-note");
        if (note) { note.textContent = "Could not load the run: " + status.error; }
      });
  }

  picker.addEventListener("change", function () { zoom.range = null; status.zoom = null; load(); });
  var log = document.getElementById("replay-log");
  if (log) { log.addEventListener("change", draw); }
  window.addEventListener("resize", draw);
  load();
})();
