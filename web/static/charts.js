// Tolerant dashboard: tiny canvas charts (lines, stacked bars, grouped bars, state timeline). No framework.
// What a run's data becomes on them (lanes, fault spans, per-second panels) is in runview.js.
"use strict";
var Charts = (function () {
  var PALETTE = ["#2f6fd6", "#d6742f", "#2e9d57", "#9c27b0", "#d64541", "#00897b", "#6d4c41", "#546e7a", "#f0a202", "#5c6bc0"];
  var STATE_COLOR = { closed: "#2e9d57", open: "#d64541", half_open: "#f0a202" };
  // Points further apart than this (samples come once a second) are not joined by a line.
  var GAP_MS = 2500;

  function fit(canvas) {
    var ratio = window.devicePixelRatio || 1;
    var width = canvas.clientWidth || 600;
    var height = canvas.height / (canvas.dataset.ratio ? parseFloat(canvas.dataset.ratio) : 1);
    if (!canvas.dataset.cssHeight) { canvas.dataset.cssHeight = String(canvas.getAttribute("height") || 200); }
    height = parseFloat(canvas.dataset.cssHeight);
    canvas.style.height = height + "px";
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.dataset.ratio = String(ratio);
    var ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px system-ui, sans-serif";
    return { ctx: ctx, w: width, h: height };
  }

  // The smallest 1, 2 or 5 times a power of ten that is at least `value`.
  function nice125(value) {
    var power = Math.pow(10, Math.floor(Math.log10(value)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) { if (steps[i] * power >= value * (1 - 1e-9)) { return steps[i] * power; } }
    return 10 * power;
  }

  // An axis top at or above `value` that is a whole number (at most four) of round steps: ticks read 0, 250,
  // 500… or 0, 2, 4…, never 1.3 or 3.8.
  function niceMax(value) {
    if (!(value > 0)) { return 1; }
    var step = nice125(value / 4);
    return step * Math.ceil(value / step - 1e-9);
  }

  // The round step between ticks of an axis topped by `top` (from niceMax): whole tick counts only.
  function tickStep(top) {
    var step = nice125(top / 5);
    for (var i = 0; i < 12; i++) {
      var count = top / step;
      if (Math.abs(count - Math.round(count)) < 1e-6) { return step; }
      step = nice125(step * 1.5);
    }
    return top / 4;
  }

  function clock(ms) {
    var d = new Date(ms);
    var two = function (n) { return (n < 10 ? "0" : "") + n; };
    return two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds());
  }

  function frame(c, pad, yMax, t0, t1, yUnit) {
    var ctx = c.ctx;
    ctx.strokeStyle = "#dde1e6"; ctx.fillStyle = "#6b7480"; ctx.lineWidth = 1;
    var step = tickStep(yMax), ticks = Math.round(yMax / step);
    for (var i = 0; i <= ticks; i++) {
      var y = pad.t + (c.h - pad.t - pad.b) * (1 - i / ticks);
      ctx.beginPath(); ctx.moveTo(pad.l, y); ctx.lineTo(c.w - pad.r, y); ctx.stroke();
      ctx.textAlign = "right"; ctx.fillText(formatNumber(step * i), pad.l - 4, y + 3);
    }
    if (yUnit) { ctx.textAlign = "left"; ctx.fillText(yUnit, pad.l + 4, pad.t + 10); }
    if (t1 > t0) { timeAxis(ctx, pad.l, c.w - pad.r, c.h - 4, t0, t1); }
  }

  function logFrame(c, pad, bottom, top, t0, t1, yUnit) {
    var ctx = c.ctx;
    ctx.strokeStyle = "#dde1e6"; ctx.fillStyle = "#6b7480"; ctx.lineWidth = 1;
    for (var k = bottom; k <= top; k++) {
      var y = pad.t + (c.h - pad.t - pad.b) * (1 - (k - bottom) / Math.max(1, top - bottom));
      ctx.beginPath(); ctx.moveTo(pad.l, y); ctx.lineTo(c.w - pad.r, y); ctx.stroke();
      ctx.textAlign = "right"; ctx.fillText(formatNumber(Math.pow(10, k)), pad.l - 4, y + 3);
    }
    if (yUnit) { ctx.textAlign = "left"; ctx.fillText(yUnit + " (log)", pad.l + 4, pad.t + 10); }
    if (t1 > t0) { timeAxis(ctx, pad.l, c.w - pad.r, c.h - 4, t0, t1); }
  }

  // One endpoint's latency histogram: bars per bucket, a p95 marker, labelled axes.
  function histogram(canvas, labels, values, title) {
    // The title on its own line above the plot, the p95 label on the next: they never overlap.
    var c = fit(canvas), pad = { l: 48, r: 10, t: 32, b: 34 };
    var total = values.reduce(function (a, v) { return a + v; }, 0);
    if (!total) { empty(c, "no request in this range yet"); canvas.__p95 = null; return; }
    var yMax = niceMax(Math.max.apply(null, values));
    frame(c, pad, yMax, 0, 0, "");
    var slot = (c.w - pad.l - pad.r) / labels.length;
    var every = slot < 30 ? 3 : slot < 56 ? 2 : 1;
    c.ctx.fillStyle = "#6b7480"; c.ctx.textAlign = "center";
    labels.forEach(function (label, i) { if (i % every === 0) { c.ctx.fillText(label, pad.l + slot * (i + 0.5), c.h - 20); } });
    c.ctx.fillText("latency (bucket upper bound)", pad.l + (c.w - pad.l - pad.r) / 2, c.h - 4);
    c.ctx.save(); c.ctx.translate(11, pad.t + (c.h - pad.t - pad.b) / 2); c.ctx.rotate(-Math.PI / 2);
    c.ctx.fillText("requests", 0, 0); c.ctx.restore();
    c.ctx.fillStyle = "#2f6fd6";
    values.forEach(function (v, i) {
      var height = (c.h - pad.t - pad.b) * v / yMax;
      c.ctx.fillRect(pad.l + slot * i + 2, c.h - pad.b - height, slot - 4, height);
    });
    var seen = 0, p95 = labels.length - 1;
    for (var i = 0; i < values.length; i++) { seen += values[i]; if (seen >= 0.95 * total) { p95 = i; break; } }
    var px = pad.l + slot * (p95 + 1);
    c.ctx.strokeStyle = "#d64541"; c.ctx.setLineDash([5, 3]); c.ctx.beginPath(); c.ctx.moveTo(px, pad.t); c.ctx.lineTo(px, c.h - pad.b); c.ctx.stroke(); c.ctx.setLineDash([]);
    c.ctx.fillStyle = "#d64541"; c.ctx.textAlign = px > c.w - 120 ? "right" : "left";
    c.ctx.fillText("p95 " + labels[p95], px + (px > c.w - 120 ? -4 : 4), pad.t - 5);
    c.ctx.fillStyle = "#1d232b"; c.ctx.textAlign = "left"; c.ctx.fillText(title + " · " + total + " requests", pad.l, 11);
    canvas.__p95 = labels[p95];
    hoverable(canvas, function (mx) {
      var i = Math.floor((mx - pad.l) / slot);
      if (i < 0 || i >= labels.length) { return null; }
      return labels[i] + ": " + values[i] + " requests (" + (100 * values[i] / total).toFixed(1) + " %)";
    });
  }

  function timeAxis(ctx, x0, x1, y, t0, t1) {
    for (var j = 0; j <= 4; j++) {
      ctx.textAlign = j === 0 ? "left" : j === 4 ? "right" : "center";
      ctx.fillText(clock(t0 + (t1 - t0) * j / 4), x0 + (x1 - x0) * j / 4, y);
    }
  }

  function empty(c, message) {
    c.ctx.fillStyle = "#6b7480"; c.ctx.textAlign = "center";
    c.ctx.fillText(message, c.w / 2, c.h / 2);
  }

  // A tick's number: whole numbers as they are (thousands as "k" from 10 000), fractions to two digits.
  function formatNumber(v) {
    if (v >= 10000) { return parseFloat((v / 1000).toPrecision(3)) + "k"; }
    if (Math.abs(v - Math.round(v)) < 1e-9) { return String(Math.round(v)); }
    return String(parseFloat(v.toPrecision(2)));
  }

  // series: [{label, color, points: [[t, y], ...]}]
  // Only what lies in [t0, t1] (a second either side, so a line reaches the edge): a zoomed chart's axis fits it.
  function within(points, t0, t1, at) {
    return t1 > t0 ? points.filter(function (p) { var t = at(p); return t >= t0 - 1000 && t <= t1 + 1000; }) : points;
  }

  function lines(canvas, series, t0, t1, yUnit, options) {
    var c = fit(canvas), pad = { l: 44, r: options && options.right ? 44 : 10, t: 8, b: 18 };
    series = series.map(function (s) {
      var copy = {}; Object.keys(s).forEach(function (k) { copy[k] = s[k]; });
      copy.points = within(s.points, t0, t1, function (p) { return p[0]; });
      return copy;
    });
    if (!series.some(function (s) { return s.points.length > 0; })) {
      frame(c, pad, 1, t0, t1, yUnit); empty(c, (options && options.empty) || "no data yet"); return;
    }
    var yMax = 0;
    series.forEach(function (s) { if (!s.right) { s.points.forEach(function (p) { yMax = Math.max(yMax, p[1]); }); } });
    var log = options && options.log;
    // Log scale: decades from 0.1 to the first power of ten above the data.
    var logTop = Math.max(0, Math.ceil(Math.log10(Math.max(yMax, 1)))), logBottom = -1;
    yMax = niceMax(yMax);
    if (log) { logFrame(c, pad, logBottom, logTop, t0, t1, yUnit); } else { frame(c, pad, yMax, t0, t1, yUnit); }
    var rightMax = 0;
    series.forEach(function (s) { if (s.right) { s.points.forEach(function (p) { rightMax = Math.max(rightMax, p[1]); }); } });
    rightMax = niceMax(rightMax);
    if (options && options.right) {
      c.ctx.textAlign = "left"; c.ctx.fillStyle = "#d6742f";
      // The right axis keeps the left's gridlines: its top is as many of its own round steps.
      var leftTicks = Math.round(yMax / tickStep(yMax)), rightStep = nice125(rightMax / leftTicks);
      rightMax = rightStep * leftTicks;
      for (var i = 0; i <= leftTicks; i++) {
        var y = pad.t + (c.h - pad.t - pad.b) * (1 - i / leftTicks);
        c.ctx.fillText(formatNumber(rightStep * i), c.w - pad.r + 4, y + 3);
      }
      c.ctx.textAlign = "right"; c.ctx.fillText(options.right, c.w - pad.r - 4, pad.t + 10);
    }
    var x = function (t) { return pad.l + (c.w - pad.l - pad.r) * (t - t0) / Math.max(1, t1 - t0); };
    if (t1 > t0) { zoomable(canvas, pad.l, c.w - pad.r, t0, t1); }
    c.ctx.save(); c.ctx.beginPath(); c.ctx.rect(pad.l, 0, c.w - pad.l - pad.r, c.h); c.ctx.clip();
    series.forEach(function (s, index) {
      var max = s.right ? rightMax : yMax;
      var yy = log && !s.right
        ? function (v) { var l = Math.log10(Math.max(v, 0.1)); return pad.t + (c.h - pad.t - pad.b) * (1 - (l - logBottom) / (logTop - logBottom)); }
        : function (v) { return pad.t + (c.h - pad.t - pad.b) * (1 - v / max); };
      c.ctx.strokeStyle = s.color || PALETTE[index % PALETTE.length]; c.ctx.lineWidth = 1.6;
      c.ctx.setLineDash(s.dash ? [4, 3] : []);
      c.ctx.beginPath();
      // Seconds without data are a gap, not a straight line across them; a lone second is a dot.
      s.points.forEach(function (p, i) {
        var joined = i > 0 && p[0] - s.points[i - 1][0] <= GAP_MS;
        if (joined) { c.ctx.lineTo(x(p[0]), yy(p[1])); } else { c.ctx.moveTo(x(p[0]), yy(p[1])); }
        var next = s.points[i + 1];
        if (!joined && !(next && next[0] - p[0] <= GAP_MS)) { c.ctx.fillStyle = c.ctx.strokeStyle; c.ctx.fillRect(x(p[0]) - 1.5, yy(p[1]) - 1.5, 3, 3); }
      });
      c.ctx.stroke();
      c.ctx.setLineDash([]);
    });
    c.ctx.restore();
    hoverable(canvas, function (mx) {
      if (mx < pad.l || mx > c.w - pad.r) { return null; }
      var t = t0 + (mx - pad.l) / Math.max(1, c.w - pad.l - pad.r) * (t1 - t0);
      var parts = [];
      series.forEach(function (s) {
        var best = null;
        s.points.forEach(function (p) { if (!best || Math.abs(p[0] - t) < Math.abs(best[0] - t)) { best = p; } });
        if (best && Math.abs(best[0] - t) <= 1500) {
          parts.push(s.label + ": " + formatValue(best[1]) + " " + (s.right ? (options && options.right) || "" : yUnit || ""));
        }
      });
      return clock(t) + (parts.length ? "\n" + parts.join("\n") : "  (no sample)");
    });
  }

  function formatValue(v) {
    if (v >= 100) { return v.toFixed(0); }
    if (v >= 1) { return v.toFixed(1); }
    return v.toFixed(2);
  }

  // bars: [{t, parts: [value, ...]}], colors: one per part
  function stacked(canvas, bars, colors, t0, t1, labels) {
    var c = fit(canvas), pad = { l: 44, r: 10, t: 8, b: 18 };
    bars = within(bars, t0, t1, function (b) { return b.t; });
    if (!bars.length) { frame(c, pad, 1, t0, t1, "/s"); empty(c, "no data yet"); return; }
    var yMax = 0;
    bars.forEach(function (b) { yMax = Math.max(yMax, b.parts.reduce(function (a, v) { return a + v; }, 0)); });
    yMax = niceMax(yMax);
    frame(c, pad, yMax, t0, t1, "/s");
    var span = Math.max(1, t1 - t0), scale = (c.w - pad.l - pad.r) / span;
    zoomable(canvas, pad.l, c.w - pad.r, t0, t1);
    c.ctx.save(); c.ctx.beginPath(); c.ctx.rect(pad.l, 0, c.w - pad.l - pad.r, c.h); c.ctx.clip();
    bars.forEach(function (b, i) {
      // Each bar covers the time since the previous sample (at most a second).
      var covered = i > 0 ? Math.min(1000, Math.max(50, b.t - bars[i - 1].t)) : 1000;
      var width = Math.max(1, covered * scale - 1);
      var x = pad.l + (b.t - covered - t0) * scale, base = c.h - pad.b;
      b.parts.forEach(function (v, i) {
        var height = (c.h - pad.t - pad.b) * v / yMax;
        c.ctx.fillStyle = colors[i]; c.ctx.fillRect(x, base - height, width, height); base -= height;
      });
    });
    c.ctx.restore();
    hoverable(canvas, function (mx) {
      if (mx < pad.l || mx > c.w - pad.r) { return null; }
      var t = t0 + (mx - pad.l) / scale, best = null;
      bars.forEach(function (b) { if (b.t >= t && (!best || b.t < best.t)) { best = b; } });
      if (!best || best.t - t > 1500) { return clock(t) + "  (no sample)"; }
      return clock(best.t) + "\n" + best.parts.map(function (v, i) { return ((labels && labels[i]) || "part " + i) + ": " + v + "/s"; }).join("\n");
    });
  }

  // groups: labels along x; series: [{label, values: [...]}]
  function grouped(canvas, labels, series, message) {
    var c = fit(canvas), pad = { l: 44, r: 10, t: 8, b: 30 };
    if (!series.length) { empty(c, message || "no data yet"); return; }
    var yMax = 0;
    series.forEach(function (s) { s.values.forEach(function (v) { yMax = Math.max(yMax, v); }); });
    yMax = niceMax(yMax);
    frame(c, pad, yMax, 0, 0, "");
    var slot = (c.w - pad.l - pad.r) / Math.max(1, labels.length), bar = slot / Math.max(1, series.length + 1);
    c.ctx.textAlign = "center"; c.ctx.fillStyle = "#6b7480";
    labels.forEach(function (label, i) { c.ctx.fillText(label, pad.l + slot * (i + 0.5), c.h - 16); });
    series.forEach(function (s, k) {
      c.ctx.fillStyle = PALETTE[k % PALETTE.length];
      s.values.forEach(function (v, i) {
        var height = (c.h - pad.t - pad.b) * v / yMax;
        c.ctx.fillRect(pad.l + slot * i + bar * (k + 0.5), c.h - pad.b - height, bar * 0.9, height);
      });
    });
    var legendX = pad.l;
    series.forEach(function (s, k) {
      c.ctx.fillStyle = PALETTE[k % PALETTE.length]; c.ctx.fillRect(legendX, c.h - 10, 10, 8);
      c.ctx.fillStyle = "#1d232b"; c.ctx.textAlign = "left"; c.ctx.fillText(s.label, legendX + 13, c.h - 2);
      legendX += 20 + c.ctx.measureText(s.label).width;
    });
  }

  // rows: [{label, value, max}] horizontal occupancy bars
  function occupancy(canvas, rows) {
    var c = fit(canvas), left = 110, rowH = Math.min(22, (c.h - 4) / Math.max(1, rows.length));
    if (!rows.length) { empty(c, "no data yet"); return; }
    rows.forEach(function (row, i) {
      var y = 2 + i * rowH, full = c.w - left - 60, share = row.max > 0 ? Math.min(1, row.value / row.max) : 0;
      c.ctx.fillStyle = "#1d232b"; c.ctx.textAlign = "right"; c.ctx.fillText(row.label, left - 6, y + rowH * 0.65);
      c.ctx.fillStyle = "#e8ebef"; c.ctx.fillRect(left, y + 2, full, rowH - 5);
      c.ctx.fillStyle = share > 0.9 ? "#d64541" : share > 0.6 ? "#f0a202" : "#2e9d57";
      c.ctx.fillRect(left, y + 2, full * share, rowH - 5);
      c.ctx.fillStyle = "#6b7480"; c.ctx.textAlign = "left";
      c.ctx.fillText(row.value + " / " + row.max + (row.queued ? " +" + row.queued + "q" : ""), left + full + 6, y + rowH * 0.65);
    });
  }

  // Hover: a chart sets canvas.__hover = function (x, y) -> text or null; one tooltip serves every chart.
  var tip = null;
  function hoverable(canvas, describe) {
    canvas.__hover = describe;
    if (canvas.__hoverBound) { return; }
    canvas.__hoverBound = true;
    canvas.addEventListener("mousemove", function (event) {
      var box = canvas.getBoundingClientRect();
      var text = canvas.__hover ? canvas.__hover(event.clientX - box.left, event.clientY - box.top) : null;
      if (!tip) { tip = document.createElement("div"); tip.className = "chart-tip"; tip.id = "chart-tip"; document.body.appendChild(tip); }
      if (!text) { tip.style.display = "none"; return; }
      tip.textContent = text;
      tip.style.display = "block";
      var left = Math.min(event.pageX + 12, window.scrollX + document.documentElement.clientWidth - tip.offsetWidth - 8);
      tip.style.left = left + "px"; tip.style.top = (event.pageY + 14) + "px";
    });
    canvas.addEventListener("mouseleave", function () { if (tip) { tip.style.display = "none"; } });
  }

  // Drag-to-zoom on the time-series charts (Grafana-like): dragging across a chart's plot area picks a time
  // range and hands it to Charts.onZoom (set by the page, which redraws every chart over it and offers a reset).
  // A chart calls zoomable with where its plot area lies and the times at its edges.
  var selection = null;
  function zoomable(canvas, left, right, t0, t1) {
    canvas.__zoom = { left: left, right: right, t0: t0, t1: t1 };
    if (canvas.__zoomBound) { return; }
    canvas.__zoomBound = true;
    canvas.classList.add("zoomable");
    var start = null;
    var at = function (event) { return event.clientX - canvas.getBoundingClientRect().left; };
    var clamp = function (x) { var z = canvas.__zoom; return Math.min(Math.max(x, z.left), z.right); };
    var timeOf = function (x) { var z = canvas.__zoom; return z.t0 + (x - z.left) / Math.max(1, z.right - z.left) * (z.t1 - z.t0); };
    canvas.addEventListener("mousedown", function (event) {
      var x = at(event), z = canvas.__zoom;
      if (!z || x < z.left || x > z.right || event.button !== 0) { return; }
      start = x; event.preventDefault();
    });
    window.addEventListener("mousemove", function (event) {
      if (start === null) { return; }
      var box = canvas.getBoundingClientRect(), x = clamp(at(event));
      if (!selection) { selection = document.createElement("div"); selection.className = "zoom-selection"; document.body.appendChild(selection); }
      selection.style.display = "block";
      selection.style.left = (window.scrollX + box.left + Math.min(start, x)) + "px";
      selection.style.width = Math.abs(x - start) + "px";
      selection.style.top = (window.scrollY + box.top) + "px";
      selection.style.height = box.height + "px";
    });
    window.addEventListener("mouseup", function (event) {
      if (start === null) { return; }
      var from = clamp(start), to = clamp(at(event));
      start = null;
      if (selection) { selection.style.display = "none"; }
      if (Math.abs(to - from) < 5 || !Charts.onZoom) { return; }
      Charts.onZoom(timeOf(Math.min(from, to)), timeOf(Math.max(from, to)));
    });
  }

  function hatch(ctx, x, y, w, h) {
    ctx.save(); ctx.beginPath(); ctx.rect(x, y, w, h); ctx.clip();
    ctx.strokeStyle = "rgba(255,255,255,0.75)"; ctx.lineWidth = 2;
    for (var k = -h; k < w; k += 7) { ctx.beginPath(); ctx.moveTo(x + k, y + h); ctx.lineTo(x + k + h, y); ctx.stroke(); }
    ctx.restore();
  }

  // rows: [{name, group, label, segments: [{from, to, state, kind, reason}]}] (kind: tripped | forced | shadow),
  // faults: [{from, to, text}], notes: [{at, text}], marks: [{at, name, text}] (mode switches on a lane).
  // emptyText: what the lanes' room says when there is no lane (the live page waits for the breakers; a
  // replayed run had none change state).
  function timeline(canvas, rows, faults, notes, t0, t1, marks, emptyText) {
    marks = marks || [];
    var rowH = 20, groupH = 16, top = 4;
    var groups = [];
    rows.forEach(function (row) { if (groups.indexOf(row.group) < 0) { groups.push(row.group); } });
    var wanted = top + Math.max(1, rows.length) * rowH + groups.length * groupH + 20 + 30 + 16;
    canvas.dataset.cssHeight = String(Math.max(120, wanted));
    var c = fit(canvas), right = 10;
    c.ctx.font = "12px system-ui, sans-serif";
    var left = 90;
    var badgeW = function (row) { if (!row.badge) { return 0; } c.ctx.font = "10px system-ui, sans-serif"; var w = c.ctx.measureText(row.badge).width + 10; c.ctx.font = "12px system-ui, sans-serif"; return w + 4; };
    rows.forEach(function (row) { left = Math.max(left, c.ctx.measureText(row.label).width + badgeW(row) + 22); });
    groups.forEach(function (g) { left = Math.max(left, c.ctx.measureText(g).width + 14); });
    left = Math.min(left, c.w * 0.45);
    var x = function (t) { return left + (c.w - left - right) * (Math.min(Math.max(t, t0), t1) - t0) / Math.max(1, t1 - t0); };
    var tAt = function (px) { return t0 + (px - left) / Math.max(1, c.w - left - right) * (t1 - t0); };
    var y = top, laneY = {}, hits = [], lastGroup = null;
    rows.forEach(function (row) {
      if (row.group !== lastGroup) {
        lastGroup = row.group;
        c.ctx.fillStyle = "#1d232b"; c.ctx.textAlign = "left"; c.ctx.font = "600 12px system-ui, sans-serif";
        c.ctx.fillText(row.group, 4, y + 12);
        c.ctx.strokeStyle = "#dde1e6"; c.ctx.beginPath(); c.ctx.moveTo(4, y + groupH - 1); c.ctx.lineTo(c.w - right, y + groupH - 1); c.ctx.stroke();
        y += groupH;
      }
      c.ctx.font = "12px system-ui, sans-serif";
      var bw = badgeW(row);
      if (bw) {
        // The source badge: a grey pill right of the label, next to the lane.
        c.ctx.fillStyle = "#e1e5ea"; c.ctx.fillRect(left - 4 - bw, y + 4, bw - 4, rowH - 8);
        c.ctx.font = "10px system-ui, sans-serif"; c.ctx.fillStyle = "#3d4650"; c.ctx.textAlign = "center";
        c.ctx.fillText(row.badge, left - 4 - bw / 2 - 2, y + 13);
        c.ctx.font = "12px system-ui, sans-serif";
      }
      c.ctx.fillStyle = "#1d232b"; c.ctx.textAlign = "right"; c.ctx.fillText(row.label, left - 6 - bw, y + 14);
      laneY[row.name] = y;
      row.segments.forEach(function (s) {
        if (s.to < t0) { return; }
        var sx = x(s.from), sw = Math.max(1, x(s.to) - x(s.from));
        c.ctx.globalAlpha = s.kind === "shadow" ? 0.45 : 1;
        c.ctx.fillStyle = s.kind === "forced" ? "#7a1f1d" : s.kind === "disabled" ? "#9aa3ad" : (STATE_COLOR[s.state] || "#999");
        c.ctx.fillRect(sx, y + 3, sw, rowH - 6);
        c.ctx.globalAlpha = 1;
        if (s.kind === "forced") { hatch(c.ctx, sx, y + 3, sw, rowH - 6); }
        hits.push({ x0: sx, x1: sx + sw, y0: y, y1: y + rowH, text: row.name + ": " + s.state.replace("_", "-") +
          (s.kind === "forced" ? " (forced open by its mode)" : s.kind === "shadow" ? " (shadow: would have; calls still pass)" : s.kind === "disabled" ? " (disabled: detects nothing)" : "") +
          " from " + clock(s.from) + (s.reason ? " — " + s.reason : "") });
      });
      y += rowH;
    });
    marks.forEach(function (m) {
      var ly = laneY[m.name];
      if (ly === undefined || m.at < t0) { return; }
      var mx = x(m.at);
      c.ctx.fillStyle = "#1d232b";
      c.ctx.beginPath(); c.ctx.moveTo(mx - 5, ly); c.ctx.lineTo(mx + 5, ly); c.ctx.lineTo(mx, ly + 7); c.ctx.closePath(); c.ctx.fill();
      hits.unshift({ x0: mx - 6, x1: mx + 6, y0: ly, y1: ly + rowH, text: clock(m.at) + " " + m.name + ": " + m.text });
    });
    if (!rows.length) {
      // A lane's room for the message, so it never sits on the fault bar.
      c.ctx.fillStyle = "#6b7480"; c.ctx.textAlign = "center"; c.ctx.font = "11px system-ui, sans-serif";
      c.ctx.fillText(emptyText || "waiting for the services' breakers…", left + (c.w - left) / 2, y + 14);
      c.ctx.font = "12px system-ui, sans-serif";
      y += rowH;
    }
    var faultY = y + 4;
    c.ctx.fillStyle = "#1d232b"; c.ctx.textAlign = "right"; c.ctx.fillText("fault active", left - 6, faultY + 11);
    c.ctx.fillStyle = "#efe7f3"; c.ctx.fillRect(left, faultY + 2, c.w - left - right, 12);
    c.ctx.fillStyle = "#7d3c98";
    faults.forEach(function (f) {
      if (f.to < t0) { return; }
      c.ctx.fillRect(x(f.from), faultY + 2, Math.max(1, x(f.to) - x(f.from)), 12);
      hits.push({ x0: x(f.from), x1: x(f.to), y0: faultY, y1: faultY + 16, text: "fault " + (f.text || "") + " from " + clock(f.from) });
    });
    c.ctx.strokeStyle = "#2f6fd6"; c.ctx.fillStyle = "#2f6fd6"; c.ctx.textAlign = "left";
    notes.forEach(function (n) {
      if (n.at < t0) { return; }
      c.ctx.beginPath(); c.ctx.moveTo(x(n.at), top); c.ctx.lineTo(x(n.at), faultY + 16); c.ctx.stroke();
      var nearEnd = x(n.at) > c.w - 220;
      c.ctx.textAlign = nearEnd ? "right" : "left";
      c.ctx.fillText(n.text.slice(0, 40), x(n.at) + (nearEnd ? -3 : 3), faultY + 28);
      hits.unshift({ x0: x(n.at) - 4, x1: x(n.at) + 4, y0: top, y1: faultY + 30, text: clock(n.at) + " note: " + n.text });
    });
    c.ctx.fillStyle = "#6b7480"; c.ctx.font = "11px system-ui, sans-serif";
    timeAxis(c.ctx, left, c.w - right, c.h - 2, t0, t1);
    zoomable(canvas, left, c.w - right, t0, t1);
    hoverable(canvas, function (mx, my) {
      var hit = hits.find(function (h) { return mx >= h.x0 && mx <= h.x1 && my >= h.y0 && my <= h.y1; });
      if (hit) { return hit.text; }
      return mx >= left ? clock(tAt(mx)) : null;
    });
  }

  function escapeHtml(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  // One zoom per page: the time range last dragged across any chart, shown by every chart until the page's
  // "Reset zoom" button (#zoom-reset). `status.zoom` mirrors it for tests; `redraw` draws the page again.
  function pageZoom(status, redraw) {
    var zoom = { range: null };
    var reset = document.getElementById("zoom-reset");
    zoom.set = function (range) {
      zoom.range = range; status.zoom = range;
      if (reset) { reset.hidden = !range; }
      redraw();
    };
    Charts.onZoom = function (from, to) { zoom.set([from, to]); };
    if (reset) { reset.addEventListener("click", function () { zoom.set(null); }); }
    return zoom;
  }

  return { onZoom: null, zoomable: zoomable, pageZoom: pageZoom, escapeHtml: escapeHtml, lines: lines, stacked: stacked, grouped: grouped, occupancy: occupancy, timeline: timeline, histogram: histogram, clock: clock, palette: PALETTE, hoverable: hoverable };
})();
