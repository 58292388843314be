(function () {
  "use strict";
  // The context view at any version, from the epochs the page embeds (see sessionstore/viewer/timeline.py):
  // at version v, the view is the view at the end of v's epoch restricted to versions <= v.
  var doc = document, root = doc.documentElement;
  var source = doc.getElementById("timeline-data");
  if (!source) { return; }
  var data = JSON.parse(source.textContent);
  var head = data.head;
  if (!head) { return; }
  root.classList.add("js");
  var STATES = data.states;
  var byVersion = [];
  doc.querySelectorAll("main [data-version]").forEach(function (el) { byVersion[+el.dataset.version] = el; });
  var dividers = doc.querySelectorAll("main [data-next]");  // day headings and compaction cuts
  var slider = doc.getElementById("at"), number = doc.getElementById("at-number");
  var info = doc.getElementById("at-info"), cursor = doc.getElementById("cursor");
  var chart = doc.querySelector("svg.chart");
  var body = doc.body;

  function epochAt(v) {
    var lo = 0, hi = data.epochs.length - 1;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (data.epochs[mid][0] <= v) { lo = mid; } else { hi = mid - 1; }
    }
    return data.epochs[lo];
  }

  function membersAt(v) {
    var epoch = epochAt(v), found = {};
    Object.keys(epoch[2]).forEach(function (code) {
      epoch[2][code].forEach(function (run) {
        for (var i = run[0], end = Math.min(run[1], v); i <= end; i++) { found[i] = STATES[code]; }
      });
    });
    return { epoch: epoch, states: found };
  }

  function tokensAt(v, epoch) {
    // exact at both ends of an epoch; in between, within a few tokens a message (timeline.py)
    return { value: data.tokens[v - 1], exact: v === epoch[0] || v === epoch[1] };
  }

  function fmt(n) { return n.toLocaleString("en-US"); }

  function setText(parent, parts) {
    parent.textContent = "";
    parts.forEach(function (part) {
      var node = part[1] ? doc.createElement("b") : doc.createTextNode(part[0]);
      if (part[1]) { node.textContent = part[0]; }
      parent.appendChild(node);
    });
  }

  var pending = 0;
  function show(v) {
    v = Math.max(1, Math.min(head, Math.round(v) || head));
    slider.value = v;
    number.value = v;
    var found = membersAt(v), inView = 0;
    for (var i = 1; i < byVersion.length; i++) {
      var el = byVersion[i];
      if (!el) { continue; }
      var state = found.states[i];
      el.dataset.view = i > v ? "future" : (state ? "in" : "out");
      el.dataset.state = i > v ? "" : (state || "");
      if (state && i <= v) { inView++; }
    }
    dividers.forEach(function (el) { el.dataset.view = +el.dataset.next > v ? "future" : "in"; });
    var tokens = tokensAt(v, found.epoch), last = null;
    data.compactions.forEach(function (c) { if (c[1] <= v) { last = c; } });
    var parts = [["In the view at ", false], ["v" + fmt(v), true], [": ", false], [fmt(inView), true],
                 [" of " + fmt(v) + " events, " + (tokens.exact ? "" : "≈ "), false], [fmt(tokens.value), true],
                 [" tokens", false]];
    parts.push([last ? " · compaction " + last[0] + " (v" + fmt(last[1]) + ") in force, kept from v" + fmt(last[2])
                     : " · no compaction yet", false]);
    setText(info, parts);
    if (cursor && chart) {
      var x0 = +chart.dataset.x0, x1 = +chart.dataset.x1;
      var x = head > 1 ? x0 + (v - 1) / (head - 1) * (x1 - x0) : (x0 + x1) / 2;
      cursor.setAttribute("x1", x.toFixed(1));
      cursor.setAttribute("x2", x.toFixed(1));
    }
  }

  function schedule(v, markMode) {
    if (markMode && body.classList.contains("mode-all")) { setMode("mark"); }
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(function () { show(v); });
  }

  function setMode(mode) {
    body.classList.remove("mode-all", "mode-mark", "mode-only");
    body.classList.add("mode-" + mode);
    var radio = doc.querySelector("input[name=mode][value=" + mode + "]");
    if (radio) { radio.checked = true; }
  }

  slider.addEventListener("input", function () { schedule(+slider.value, true); });
  number.addEventListener("change", function () {
    schedule(+number.value, true);
    var target = byVersion[Math.max(1, Math.min(head, +number.value))];
    if (target) { target.scrollIntoView({ block: "start" }); }
  });
  doc.querySelectorAll("input[name=mode]").forEach(function (radio) {
    radio.addEventListener("change", function () { setMode(radio.value); });
  });
  var noise = doc.getElementById("show-noise");
  if (noise) {
    noise.addEventListener("change", function () { body.classList.toggle("hide-noise", !noise.checked); });
  }
  function openAll(open) {
    doc.querySelectorAll("main details").forEach(function (d) { d.open = open; });
  }
  doc.getElementById("expand-all").addEventListener("click", function () { openAll(true); });
  doc.getElementById("collapse-all").addEventListener("click", function () { openAll(false); });
  if (chart) {
    chart.addEventListener("click", function (event) {
      var box = chart.getBoundingClientRect(), width = chart.viewBox.baseVal.width;
      var x = (event.clientX - box.left) / box.width * width;
      var x0 = +chart.dataset.x0, x1 = +chart.dataset.x1;
      schedule(1 + (x - x0) / (x1 - x0) * (head - 1), true);
    });
  }
  show(head);
})();
