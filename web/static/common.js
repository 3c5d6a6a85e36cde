// Tolerant dashboard: small helpers shared by every page (no framework, no CDN).
"use strict";
(function () {
  // Start now / schedule: the schedule button copies the picked local time into `at` as Unix ms.
  document.querySelectorAll("form.start-form").forEach(function (form) {
    form.querySelectorAll("button").forEach(function (button) {
      button.addEventListener("click", function (event) {
        var at = form.querySelector("input[name=at]");
        if (button.classList.contains("schedule")) {
          var picked = form.querySelector(".at-picker").value;
          if (!picked) { event.preventDefault(); alert("Pick a start time first."); return; }
          at.value = String(new Date(picked).getTime());
        } else {
          at.value = "";
        }
      });
    });
  });
  // Abort asks first: it ends the running run, and the experiment is stored aborted.
  document.querySelectorAll("button.abort").forEach(function (button) {
    button.addEventListener("click", function (event) {
      if (!confirm("Abort this experiment? Its running run ends now and the experiment is stored aborted.")) { event.preventDefault(); }
    });
  });
  // Load a spec file into the textarea.
  var file = document.getElementById("spec-file");
  if (file) {
    file.addEventListener("change", function () {
      var chosen = file.files && file.files[0];
      if (!chosen) { return; }
      var reader = new FileReader();
      reader.onload = function () { document.getElementById("spec").value = String(reader.result); };
      reader.readAsText(chosen);
    });
  }
  // The quick form writes a spec into the textarea.
  var quick = document.getElementById("quick-fill");
  if (quick) {
    quick.addEventListener("click", function () {
      var form = document.getElementById("quick-form");
      var value = function (name) { return form.elements[name].value.trim(); };
      var rates = value("rates").split(",").map(function (r) { return (parseFloat(r) / 100).toString(); });
      var modes = value("modes").split(",").map(function (m) { return JSON.stringify(m.trim()); });
      document.getElementById("spec").value = [
        "name = " + JSON.stringify(value("name")),
        "rounds = " + parseInt(value("rounds"), 10),
        "duration = " + JSON.stringify(value("duration")),
        "warmup = " + JSON.stringify(value("warmup")),
        "time_scale = " + parseFloat(value("time_scale")),
        "seed = 42", "",
        "[load]", "users = " + parseInt(value("users"), 10), 'think_time = ["1s", "10s"]', "",
        "[fault]", 'target = "payment"', 'kind = "error"', "status = 500", "rates = [" + rates.join(", ") + "]", "",
        "[breaker]", "modes = [" + modes.join(", ") + "]", ""
      ].join("\n");
    });
  }
  // "Insert example" puts the example spec into the (empty) spec box.
  var example = document.getElementById("insert-example");
  if (example) {
    example.addEventListener("click", function () {
      var spec = document.getElementById("spec");
      if (spec.value.trim() && !confirm("Replace the spec in the box with the example?")) { return; }
      spec.value = document.getElementById("example-spec").content.textContent;
    });
  }
  // Forms marked data-remember keep their values across the redirect after they are applied.
  document.querySelectorAll("form[data-remember]").forEach(function (form) {
    var key = "tolerant:" + form.dataset.remember;
    try {
      var saved = JSON.parse(localStorage.getItem(key) || "{}");
      Object.keys(saved).forEach(function (name) {
        var field = form.elements[name];
        if (field && field.type !== "hidden" && field.type !== "submit") { field.value = saved[name]; }
      });
    } catch (ignored) { /* no storage: the defaults stay */ }
    form.addEventListener("submit", function () {
      var values = {};
      Array.prototype.forEach.call(form.elements, function (field) {
        if (field.name && field.type !== "hidden" && field.type !== "submit" && field.type !== "button") { values[field.name] = field.value; }
      });
      try { localStorage.setItem(key, JSON.stringify(values)); } catch (ignored) { /* private mode */ }
    });
  });
  // Rate slider readout.
  var rate = document.getElementById("rate");
  if (rate) {
    var out = document.getElementById("rate-value");
    var show = function () { out.textContent = rate.value + " %"; };
    rate.addEventListener("input", show);
    show();
  }
})();
