// The advisor page: the form writes the `tolerant tune` input's TOML (shown, editable); Search posts it with
// the current config to POST /api/tune and draws the answer — the front as an SVG whose points show their
// config and costs under the pointer, the current config marked, the reasons and decisions, a download per
// library, and the verification's spec for the start button.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const form = $("tune-form");
  const input = $("tune-input");
  const profiles = $("tune-profiles").querySelector("tbody");
  const kinds = ["partial", "blips", "outage", "hang", "baseline"];
  const start = [
    { name: "partial-25", kind: "partial", rate: "0.25", length: "", every: "", weight: "1", fault: "error" },
    { name: "blips-3s", kind: "blips", rate: "", length: "3s", every: "30s", weight: "1", fault: "error" },
  ];

  function cell(tr, value, name, size) {
    const td = document.createElement("td");
    const field = document.createElement("input");
    field.type = "text";
    field.name = name;
    field.value = value;
    field.size = size;
    td.appendChild(field);
    tr.appendChild(td);
  }

  function addProfile(p) {
    const tr = document.createElement("tr");
    cell(tr, p.name, "name", 10);
    const kindCell = document.createElement("td");
    const kind = document.createElement("select");
    kind.name = "kind";
    for (const k of kinds) kind.add(new Option(k, k, false, k === p.kind));
    kindCell.appendChild(kind);
    tr.appendChild(kindCell);
    cell(tr, p.rate, "rate", 5);
    cell(tr, p.length, "length", 5);
    cell(tr, p.every, "every", 5);
    cell(tr, p.weight, "weight", 4);
    const faultCell = document.createElement("td");
    const fault = document.createElement("select");
    fault.name = "fault";
    for (const f of ["error", "hang"]) fault.add(new Option(f, f, false, f === p.fault));
    faultCell.appendChild(fault);
    tr.appendChild(faultCell);
    const remove = document.createElement("td");
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "×";
    button.title = "Remove this profile";
    button.addEventListener("click", () => { tr.remove(); write(); });
    remove.appendChild(button);
    tr.appendChild(remove);
    profiles.appendChild(tr);
  }

  const quote = (text) => JSON.stringify(String(text));
  const value = (name) => form.elements[name].value.trim();

  // The TOML of the form, the vocabulary of experiments/README.md.
  function toml() {
    const lines = ['name = "payment"', "", "[traffic]", `rate = ${Number(value("rate"))}`,
      `timeout = ${quote(value("timeout"))}`, `latency = ${quote(value("latency"))}`,
      `instances = ${Number(value("instances"))}`];
    for (const tr of profiles.querySelectorAll("tr")) {
      const get = (name) => tr.querySelector(`[name=${name}]`).value.trim();
      const kind = get("kind");
      lines.push("", "[[profiles]]", `name = ${quote(get("name"))}`, `kind = ${quote(kind)}`,
        `weight = ${Number(get("weight") || 1)}`);
      if (kind === "partial" || kind === "baseline") lines.push(`rate = ${Number(get("rate"))}`);
      if (kind !== "partial" && kind !== "baseline") lines.push(`length = ${quote(get("length"))}`);
      if (kind === "blips") lines.push(`every = ${quote(get("every"))}`);
      if ((kind === "blips" || kind === "partial") && get("fault") === "hang") lines.push('fault = "hang"');
    }
    lines.push("", "[costs]");
    for (const name of ["rejected_success", "blocked_second", "refused", "detect_second"]) {
      lines.push(`${name} = ${Number(value(name))}`);
    }
    lines.push("", "[constraints]");
    if (value("detect_within")) lines.push(`detect_within = ${quote(value("detect_within"))}`);
    if (value("false_trips_per_hour")) lines.push(`false_trips_per_hour = ${Number(value("false_trips_per_hour"))}`);
    lines.push("", "[verify]", "top = 2", "rounds = 5", "time_scale = 4.0");
    return lines.join("\n") + "\n";
  }

  function write() { input.value = toml(); }

  for (const p of start) addProfile(p);
  form.addEventListener("input", write);
  form.addEventListener("change", write);
  $("tune-add-profile").addEventListener("click", () => {
    addProfile({ name: `profile-${profiles.children.length + 1}`, kind: "outage", rate: "", length: "60s", every: "", weight: "1", fault: "error" });
    write();
  });

  const svgNS = "http://www.w3.org/2000/svg";
  function el(name, attrs, parent) {
    const node = document.createElementNS(svgNS, name);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    parent.appendChild(node);
    return node;
  }

  function list(ul, items) {
    ul.textContent = "";
    for (const item of items) {
      const li = document.createElement("li");
      li.textContent = item;
      ul.appendChild(li);
    }
  }

  const fmt = (v) => (typeof v === "number" ? v.toFixed(1) : String(v));

  // An axis from 0 (or a negative minimum) in four round steps (1, 2, 2.5 or 5 × a power of ten) that cover `max`.
  function niceAxis(min, max) {
    const span = Math.max(max - min, 1e-9) / 4;
    const power = Math.pow(10, Math.floor(Math.log10(span)));
    const step = [1, 2, 2.5, 5, 10].map((s) => s * power).find((s) => s >= span);
    const low = Math.floor(min / step) * step;
    const places = -Math.floor(Math.log10(power)) + (step / power === 2.5 ? 1 : 0);
    const digits = Math.min(6, Math.max(0, places));
    return { low, high: low + 4 * step, step, label: (v) => v.toFixed(digits) };
  }

  // The front: every feasible candidate grey, the front blue, the recommendation green, the current orange.
  function chart(answer) {
    const svg = $("tune-chart");
    const tip = $("tune-tip");
    svg.textContent = "";
    const W = 860, H = 420, L = 70, R = 40, T = 20, B = 50;
    const front = answer.front;
    const current = answer.current;
    const all = answer.points.concat(front.map((p) => [p.cost.rejected_success, p.saved_s]));
    if (current) all.push([current.cost.rejected_success, current.saved_s]);
    const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
    const xAxis = niceAxis(0, Math.max(1, ...xs)), yAxis = niceAxis(Math.min(0, ...ys), Math.max(1, ...ys));
    const xMax = xAxis.high, yMin = yAxis.low, yMax = yAxis.high;
    const x = (v) => L + (v / xMax) * (W - L - R);
    const y = (v) => H - B - ((v - yMin) / (yMax - yMin)) * (H - T - B);
    el("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }, svg);
    el("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }, svg);
    for (let i = 0; i <= 4; i++) {
      const xv = xAxis.step * i, yv = yMin + yAxis.step * i;
      el("text", { x: x(xv), y: H - B + 18, "text-anchor": "middle", class: "tick" }, svg).textContent = xAxis.label(xv);
      el("text", { x: L - 6, y: y(yv) + 4, "text-anchor": "end", class: "tick" }, svg).textContent = yAxis.label(yv);
    }
    el("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", class: "label" }, svg).textContent = "cost of rejections that would have succeeded, per hour";
    el("text", { x: 14, y: (T + H - B) / 2, transform: `rotate(-90 14 ${(T + H - B) / 2})`, "text-anchor": "middle", class: "label" }, svg).textContent = "caller-seconds saved, per hour";
    for (const p of answer.points) el("circle", { cx: x(p[0]), cy: y(p[1]), r: 2.5, class: "candidate" }, svg);
    el("polyline", { points: front.map((p) => `${x(p.cost.rejected_success)},${y(p.saved_s)}`).join(" "), class: "front-line" }, svg);
    const show = (point, label, event) => {
      tip.hidden = false;
      tip.textContent = `${label}: ${point.label}\nrejections ${fmt(point.cost.rejected_success)}/h · blocked ${fmt(point.cost.blocked_second)}/h · total ${fmt(point.cost.total)}/h · saved ${fmt(point.saved_s)} s/h`;
      const box = svg.getBoundingClientRect();
      tip.style.left = `${event.clientX - box.left + 12}px`;
      tip.style.top = `${event.clientY - box.top + 12}px`;
    };
    const mark = (point, cls, r, label) => {
      const dot = el("circle", { cx: x(point.cost.rejected_success), cy: y(point.saved_s), r, class: cls, tabindex: 0 }, svg);
      dot.addEventListener("mousemove", (e) => show(point, label, e));
      dot.addEventListener("mouseleave", () => { tip.hidden = true; });
      el("title", {}, dot).textContent = `${label}: ${point.label}`;
    };
    for (const p of front) mark(p, p.recommended ? "recommended" : "front", p.recommended ? 8 : 5, p.recommended ? "recommended" : "front");
    if (current) mark(current, "current", 8, `current (${current.source})`);
  }

  function render(answer) {
    $("tune-result").hidden = false;
    const recommended = answer.front.find((p) => p.recommended);
    $("tune-recommended").textContent = recommended ? recommended.label : JSON.stringify(answer.recommended);
    list($("tune-why"), [`decided by ${answer.why.decided_by}`].concat(answer.why.reasons));
    chart(answer);
    const tbody = $("tune-front").querySelector("tbody");
    tbody.textContent = "";
    for (const p of answer.front) {
      const tr = document.createElement("tr");
      if (p.recommended) tr.className = "here";
      for (const v of [p.cost.rejected_success, p.saved_s, p.cost.total, p.label]) {
        const td = document.createElement("td");
        td.textContent = fmt(v);
        tr.appendChild(td);
      }
      tbody.appendChild(tr);
    }
    const c = answer.current;
    $("tune-current-placed").textContent = c
      ? `${c.label} — total ${fmt(c.cost.total)}/h, rank ${c.rank}; ${c.on_front ? "on the front" : `dominated by ${c.dominated_by.length} front point(s)`}${c.feasible ? "" : "; breaks " + c.violations.map((v) => `${v.constraint} (${v.profile})`).join(", ")}`
      : "none given";
    list($("tune-notes"), c ? c.notes.map((n) => `${n.field}: ${n.kind} — ${n.note}`) : []);
    list($("tune-decisions"), answer.why.decisions.map((d) => `${d.decision}: ${d.answer}`));
    const downloads = $("tune-downloads");
    downloads.textContent = "";
    for (const [library, exported] of Object.entries(answer.exports)) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = library;
      if (exported.text) {
        button.addEventListener("click", () => {
          const link = document.createElement("a");
          link.href = URL.createObjectURL(new Blob([exported.text], { type: "text/plain" }));
          link.download = exported.file;
          link.click();
          URL.revokeObjectURL(link.href);
        });
      } else {
        button.disabled = true;
        button.title = exported.error;
      }
      downloads.appendChild(button);
      downloads.appendChild(document.createTextNode(" "));
    }
    const spec = answer.spec.toml || "";
    $("tune-spec").value = spec;
    $("tune-spec-text").textContent = spec || answer.spec.error;
    const submit = $("tune-verify").querySelector("button");
    if (submit) submit.disabled = !spec;
  }

  $("tune-run").addEventListener("click", async () => {
    const status = $("tune-status");
    const error = $("tune-error");
    error.hidden = true;
    status.textContent = "searching…";
    try {
      const response = await fetch("/api/tune", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ input: input.value, current: $("tune-current").value, library: $("tune-library").value }),
      });
      const body = await response.json().catch(() => ({ error: response.statusText }));
      if (!response.ok) throw new Error(body.error || response.statusText);
      status.textContent = `${body.why.candidates} candidates, ${body.why.feasible} feasible`;
      render(body);
    } catch (e) {
      status.textContent = "";
      error.textContent = e.message;
      error.hidden = false;
    }
  });

  // `/advisor?run`: search on load (a link that shows the answer).
  if (new URLSearchParams(location.search).has("run")) $("tune-run").click();
})();
