// Tolerant dashboard: the live page's cards drawn from its model (live.js keeps the model and the window):
// the breaker tiles, the per-endpoint table, the active faults, the containers and the load workers.
"use strict";
// model, status: live.js's (updated in place); describeFault names a fault; terminal: the ended phases.
var LivePanels = function (model, status, describeFault, TERMINAL) {
  var escapeHtml = Charts.escapeHtml;

  function tileOf(name) {
    return model.board ? model.board.breakers.find(function (t) { return t.name === name; }) : null;
  }

  // Locust-like: per endpoint, its requests by outcome over the range (they add up to the outcomes chart's),
  // and the last second's ok and failed latency and rates.
  var UNSPLIT = "(no endpoint split: the frontend's counts)";
  // Since the range's start, each second's p50 and p95 weighted by its requests of that kind (the stored
  // seconds keep quantiles, not the ok and failed histograms).
  function weigh(q, requests, p50, p95) {
    if (!requests || p50 === null || p50 === undefined) { return; }
    q.p50 += requests * p50; q.p95 += requests * p95; q.w += requests;
  }
  function drawEndpointTable(samples) {
    var table = document.getElementById("endpoints");
    var rows = {}, totals = { requests: 0, failures: 0, rejections: 0, timeouts: 0 };
    samples.forEach(function (s) {
      var o = s.outcomes;
      totals.requests += o.ok + o.failed + o.rejected + o.timeout + o.connection_error + o.client_error;
      totals.failures += o.failed + o.connection_error; totals.rejections += o.rejected; totals.timeouts += o.timeout;
      // A second without the load driver's split (no run drives load: the frontend's own counts) counts apart,
      // so the rows still add up to the outcomes chart.
      var split = s.endpoints.length ? s.endpoints : (o.ok + o.failed + o.rejected + o.timeout + o.connection_error + o.client_error ? [{ name: UNSPLIT, outcomes: o }] : []);
      split.forEach(function (e) {
        var row = rows[e.name] || (rows[e.name] = { requests: 0, failures: 0, rejections: 0, timeouts: 0, last: null, lastOk: null, lastFailed: null,
          okQ: { w: 0, p50: 0, p95: 0 }, failedQ: { w: 0, p50: 0, p95: 0 } });
        var c = e.outcomes;
        if (!c) { return; }
        row.requests += c.ok + c.failed + c.rejected + c.timeout + c.connection_error + c.client_error;
        row.failures += c.failed + c.connection_error; row.rejections += c.rejected; row.timeouts += c.timeout;
        row.last = c;
        if (e.ok_p95_us !== null && e.ok_p95_us !== undefined) { row.lastOk = e; weigh(row.okQ, c.ok, e.ok_p50_us, e.ok_p95_us); }
        if (e.failed_p95_us !== null && e.failed_p95_us !== undefined) {
          row.lastFailed = e;
          weigh(row.failedQ, c.failed + c.rejected + c.timeout + c.connection_error, e.failed_p50_us, e.failed_p95_us);
        }
      });
    });
    status.endpointTable = rows; status.outcomeTotals = totals;
    if (!table) { return; }
    var names = Object.keys(rows).sort();
    var ms = function (us) { return us === null || us === undefined ? "–" : (us >= 100000 ? Math.round(us / 1000) : (us / 1000).toPrecision(2)) + " ms"; };
    var pair = function (p50, p95) { return p50 === null || p50 === undefined ? "–" : ms(p50) + " / " + ms(p95); };
    var since = function (q) { return q.w ? pair(q.p50 / q.w, q.p95 / q.w) : "–"; };
    var body = table.querySelector("tbody");
    if (!names.length) { body.innerHTML = '<tr><td colspan="11" class="muted">Appears while load runs.</td></tr>'; return; }
    body.innerHTML = names.map(function (name) {
      var r = rows[name], c = r.last || { ok: 0, failed: 0, rejected: 0, timeout: 0, connection_error: 0, client_error: 0 };
      var perSecond = c.ok + c.failed + c.rejected + c.timeout + c.connection_error + c.client_error;
      var bad = r.failures + r.rejections + r.timeouts;
      return '<tr data-endpoint="' + escapeHtml(name) + '"' + (bad ? ' class="failing"' : "") + "><td>" + escapeHtml(name) + "</td><td>" + r.requests +
        "</td><td" + (r.failures ? ' class="bad"' : "") + ">" + r.failures + "</td><td" + (r.rejections ? ' class="bad"' : "") + ">" + r.rejections +
        "</td><td>" + r.timeouts + "</td><td>" + pair(r.lastOk && r.lastOk.ok_p50_us, r.lastOk && r.lastOk.ok_p95_us) +
        "</td><td>" + pair(r.lastFailed && r.lastFailed.failed_p50_us, r.lastFailed && r.lastFailed.failed_p95_us) +
        "</td><td>" + since(r.okQ) + "</td><td>" + since(r.failedQ) +
        "</td><td>" + perSecond + "</td><td>" + (perSecond - c.ok - c.client_error) + "</td></tr>";
    }).join("") + '<tr class="total"><td>all endpoints</td><td>' + totals.requests + "</td><td>" + totals.failures + "</td><td>" + totals.rejections +
      "</td><td>" + totals.timeouts + '</td><td colspan="6"></td></tr>';
    status.endpointSince = {};
    names.forEach(function (name) { status.endpointSince[name] = { ok: since(rows[name].okQ), failed: since(rows[name].failedQ) }; });
  }

  // On the game-day page each tile switches its own breaker's mode (a leased switch, as the service-wide form's);
  // disabled for a viewer who is not logged in. One listener on the box: the tiles are redrawn every frame.
  var MODES = ["enforce", "shadow", "forced-open", "disabled"];
  var modeForm = document.getElementById("breaker-form");
  function tileSwitch(tile) {
    if (!modeForm) { return ""; }
    var allowed = !modeForm.querySelector("button[name=mode]").disabled;
    return '<div class="tile-switch" data-service="' + escapeHtml(tile.service) + '" data-breaker="' + escapeHtml(tile.name) + '">' +
      MODES.map(function (mode) {
        var off = !allowed || mode === tile.mode;
        return '<button type="button" class="mini mode-' + mode + '" data-mode="' + mode + '"' + (off ? " disabled" : "") +
          ' title="' + (allowed ? (mode === tile.mode ? "its mode now" : "switch this breaker only to " + mode) : "Log in to act") + '">' + mode.replace("-", " ") + "</button>";
      }).join("") + "</div>";
  }
  var tilesBox = document.getElementById("tiles");
  if (modeForm && tilesBox) {
    tilesBox.addEventListener("click", function (event) {
      var button = event.target.closest(".tile-switch button[data-mode]");
      if (!button || button.disabled) { return; }
      var where = button.parentNode, form = document.createElement("form");
      form.method = "post"; form.action = "/ui/breakers"; form.hidden = true;
      [["csrf", modeForm.elements.csrf.value], ["service", where.dataset.service], ["breaker", where.dataset.breaker], ["mode", button.dataset.mode]]
        .forEach(function (field) {
          var input = document.createElement("input");
          input.type = "hidden"; input.name = field[0]; input.value = field[1];
          form.appendChild(input);
        });
      document.body.appendChild(form);
      form.submit();
    });
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
        tileSwitch(tile) + "</div>");
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
    }).join("") + (pool.workers.length ? "" : '<tr><td colspan="6" class="muted">' +
      (ended ? "No worker is connected: they were told the experiment is over." : "No worker connected yet.") + "</td></tr>");
    at.textContent = "As of " + Charts.clock(panel.at_ms) + ": users of the run in progress (0 between runs), requests in the last second each sent, " +
      "and how many seconds its last record is behind the run.";
  }

  return { endpointTable: drawEndpointTable, tiles: drawTiles, activeFaults: drawActiveFaults, containers: drawContainers, workers: drawWorkers };
};
