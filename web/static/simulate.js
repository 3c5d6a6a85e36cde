// The simulator page: every slider change re-runs GET /api/simulate (debounced) and redraws the timeline
// and the totals; the spec button asks GET /api/simulate/spec for the same settings as a TOML spec.
"use strict";
(function () {
  const form = document.getElementById("sim-form");
  const error = document.getElementById("sim-error");
  const canvas = document.getElementById("sim-timeline");
  const colours = { closed: "#2e9d57", open: "#d64541", half_open: "#f0a202", fault: "#7d3c98" };
  let timer = null;
  let sequence = 0;
  let last = null;

  function query() {
    const params = new URLSearchParams();
    for (const field of form.elements) {
      if (field.name) params.set(field.name, field.value);
    }
    return params.toString();
  }

  function showValues() {
    for (const input of form.querySelectorAll("input[type=range]")) {
      const out = input.parentElement.querySelector("output");
      if (out) out.textContent = input.value;
    }
  }

  function fmt(value) {
    if (value === null || value === undefined) return "—";
    if (typeof value === "number" && !Number.isInteger(value)) return value.toFixed(2);
    return String(value);
  }

  function rows(tbody, list) {
    tbody.textContent = "";
    for (const cells of list) {
      const tr = document.createElement("tr");
      cells.forEach((cell, i) => {
        const td = document.createElement(i === 0 ? "th" : "td");
        td.textContent = i === 0 ? cell : fmt(cell);
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    }
  }

  function outageOf(settings, t) {
    const start = Number(settings.get("outage_start"));
    const length = Number(settings.get("outage"));
    return t + 1 > start && t < start + length;
  }

  function draw(run, settings) {
    const seconds = run.seconds;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth || 800;
    const height = 120;
    canvas.width = width * ratio;
    canvas.height = height * ratio;
    const ctx = canvas.getContext("2d");
    ctx.scale(ratio, ratio);
    ctx.clearRect(0, 0, width, height);
    // Both bar rows share one scale (failed requests per second), labelled on the left: round top, 0 at the lane.
    const left = 64, bar = 34, laneTop = 48, laneHeight = 24;
    const step = (width - left) / Math.max(seconds.length, 1);
    const rawPeak = Math.max(1, ...seconds.map((s) => Math.max(s.failed_without_breaker, s.slow_failures + s.fast_failures)));
    const power = Math.pow(10, Math.floor(Math.log10(rawPeak)));
    const peak = [1, 2, 5, 10].map((m) => m * power).find((v) => v >= rawPeak);
    seconds.forEach((s, i) => {
      const x = left + i * step;
      if (outageOf(settings, s.t)) {
        ctx.fillStyle = colours.fault;
        ctx.fillRect(x, 0, Math.ceil(step), 8);
      }
      ctx.fillStyle = colours[s.state] || "#999";
      ctx.fillRect(x, laneTop, Math.ceil(step), laneHeight);
      const without = (s.failed_without_breaker / peak) * bar;
      ctx.fillStyle = "rgba(214,69,65,0.55)";
      ctx.fillRect(x + step * 0.15, laneTop - 2 - without, Math.max(1, step * 0.7), without);
      const withB = ((s.slow_failures + s.fast_failures) / peak) * bar;
      ctx.fillStyle = "rgba(29,35,43,0.55)";
      ctx.fillRect(x + step * 0.15, laneTop + laneHeight + 2, Math.max(1, step * 0.7), withB);
    });
    ctx.fillStyle = "#6b7480";
    ctx.strokeStyle = "#dde1e6";
    ctx.font = "11px system-ui, sans-serif";
    ctx.textAlign = "right";
    const scaleAt = (y, text) => {
      ctx.fillText(text, left - 4, y + 4);
      ctx.beginPath(); ctx.moveTo(left - 2, y); ctx.lineTo(width, y); ctx.stroke();
    };
    scaleAt(laneTop - 2 - bar, peak + "/s");
    scaleAt(laneTop - 2, "0 without");
    scaleAt(laneTop + laneHeight + 2, "0 with");
    scaleAt(laneTop + laneHeight + 2 + bar, peak + "/s");
    ctx.textAlign = "left";
    ctx.fillText("0 s", left, height - 2);
    ctx.textAlign = "right";
    ctx.fillText(seconds.length + " s", width - 2, height - 2);
    ctx.textAlign = "left";
  }

  const models = {
    "at-timeout": "Drawing the at-timeout model: the breaker learns a hanging call's failure when its timeout ends, as the production breaker does.",
    published: "Drawing the published model: the breaker sees every outcome the instant the call is made, while the caller still waits the full timeout for it.",
  };

  // Choosing the published model moves the sliders to the published simulator's defaults.
  function applyDefaults(select) {
    const option = select.selectedOptions[0];
    if (!option || !option.dataset.defaults) return;
    for (const [name, value] of new URLSearchParams(option.dataset.defaults)) {
      const field = form.elements.namedItem(name);
      if (field) field.value = value;
    }
  }

  function show(run, settings) {
    document.getElementById("sim-model").textContent = models[run.model] || "Drawing the " + run.model + " model.";
    const t = run.totals;
    rows(document.querySelector("#sim-totals tbody"), [
      ["requests", t.requests, t.requests],
      ["successful", t.successful, t.successful_without_breaker],
      ["failed", t.failed_with_breaker, t.failed_without_breaker],
      ["reached the dependency", t.reached, t.dependency_calls],
      ["never made (rejected)", t.never_made, 0],
      ["slow failures", t.slow_failures, null],
      ["fast failures", t.fast_failures, null],
      ["caller-seconds blocked", t.caller_seconds_with, t.caller_seconds_without],
      ["refused by a full pool", t.refused_with, t.refused_without],
    ]);
    const c = run.closed_form;
    rows(document.querySelector("#sim-closed tbody"), [
      ["opens", t.opens],
      ["opens bound", c.opens_bound],
      ["study's estimate", c.opens_estimate],
      ["time to trip (s)", c.time_to_trip_s],
      ["open per instance (s)", t.open_s],
      ["half-open per instance (s)", t.half_open_s],
      ["rejected after recovery (s of traffic)", t.rejected_after_recovery_s],
      ["probes (peak per s)", t.probes + " (" + t.peak_probes_per_s + ")"],
    ]);
    last = [run, settings];
    draw(run, settings);
  }

  async function update() {
    const q = query();
    const mine = ++sequence;
    const response = await fetch("/api/simulate?" + q);
    const body = await response.json();
    if (mine !== sequence) return;
    if (!response.ok) {
      error.textContent = body.error || "simulation failed";
      error.hidden = false;
      return;
    }
    error.hidden = true;
    document.body.dataset.simulated = String(mine);
    show(body, new URLSearchParams(q));
  }

  function later() {
    showValues();
    clearTimeout(timer);
    timer = setTimeout(update, 150);
  }

  window.addEventListener("resize", () => { if (last) draw(last[0], last[1]); });
  form.addEventListener("input", later);
  form.addEventListener("change", (event) => {
    if (event.target.name === "model") applyDefaults(event.target);
    later();
  });
  document.getElementById("sim-spec").addEventListener("click", async () => {
    const box = document.getElementById("sim-spec-text");
    const response = await fetch("/api/simulate/spec?" + query());
    const text = await response.text();
    if (!response.ok) {
      let message = text;
      try { message = JSON.parse(text).error; } catch (_) { /* plain text */ }
      error.textContent = message;
      error.hidden = false;
      return;
    }
    box.value = text;
    box.hidden = false;
    box.select();
  });
  showValues();
  update();
})();
