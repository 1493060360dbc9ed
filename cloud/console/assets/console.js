// Bowline console: live updates by short polling of each page's live
// region, and keyboard shortcuts. No dependencies, nothing from the network.
(function () {
  "use strict";
  var refresh = parseInt(document.body.getAttribute("data-refresh"), 10) || 2000;
  var status = document.getElementById("live-status");

  function typing() {
    var a = document.activeElement;
    return a && (a.tagName === "INPUT" && a.type !== "checkbox" || a.tagName === "SELECT" || a.tagName === "TEXTAREA");
  }

  // Live region: replace its content with the server's, keeping what the
  // person was doing (checked boxes, focus).
  function update() {
    var live = document.getElementById("live");
    if (!live || document.hidden || typing()) { return schedule(); }
    var url = live.getAttribute("data-live");
    url += (url.indexOf("?") < 0 ? "?" : "&") + "live=1";
    var req = new XMLHttpRequest();
    req.open("GET", url);
    req.onload = function () {
      if (req.status !== 200 || req.responseURL.indexOf("/console/login") >= 0) {
        if (status) { status.textContent = "update failed"; status.title = req.status === 200 ? "the session has ended: reload to log in" : "the last update answered HTTP " + req.status; status.className = "stale"; }
        return schedule();
      }
      var checked = {};
      live.querySelectorAll("input[type=checkbox]:checked").forEach(function (c) { checked[c.name + "=" + c.value] = true; });
      var all = document.getElementById("select-all");
      var allChecked = all && all.checked;
      var focusKey = null, a = document.activeElement;
      if (a && live.contains(a)) {
        focusKey = a.id ? "#" + a.id : (a.getAttribute("href") ? "a[href='" + a.getAttribute("href") + "']" : (a.name ? "[name='" + a.name + "'][value='" + a.value + "']" : null));
      }
      live.innerHTML = req.responseText;
      // The banner and the tabs' counts come with the region.
      live.querySelectorAll("[data-sync]").forEach(function (e) {
        var to = document.getElementById(e.getAttribute("data-sync"));
        if (to) { to.innerHTML = e.innerHTML; }
        e.remove();
      });
      live.querySelectorAll("input[type=checkbox]").forEach(function (c) { if (checked[c.name + "=" + c.value]) { c.checked = true; } });
      var all2 = document.getElementById("select-all");
      if (all2) { all2.checked = allChecked; }
      if (focusKey) { var f = live.querySelector(focusKey); if (f) { f.focus(); } }
      wire();
      // The header's clocks came with the region and say the time of
      // this update; the status stays one short word, so the header
      // keeps its width (docs/console.md, "Keyboard and screen").
      if (status) { status.textContent = "live"; status.title = "updated " + new Date().toISOString().slice(11, 19) + " UTC (this browser's clock)"; status.className = ""; }
      schedule();
    };
    req.onerror = function () {
      if (status) { status.textContent = "offline"; status.className = "stale"; }
      schedule();
    };
    req.send();
  }
  var timer = null;
  function schedule() { clearTimeout(timer); timer = setTimeout(update, refresh); }

  // Dead letters: select all, and no redrive without a selection.
  function wire() {
    var form = document.getElementById("redrive-form");
    if (!form) { return; }
    var btn = document.getElementById("redrive");
    var boxes = form.querySelectorAll("input[name=event]");
    var sync = function () {
      var n = form.querySelectorAll("input[name=event]:checked").length;
      if (btn) { btn.disabled = n === 0; btn.textContent = n ? "Redrive " + n + " selected…" : "Redrive selected…"; }
    };
    boxes.forEach(function (b) { b.onchange = sync; });
    var all = document.getElementById("select-all");
    if (all) {
      all.onchange = function () { boxes.forEach(function (b) { b.checked = all.checked; }); sync(); };
    }
    sync();
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || typing()) { return; }
    var link = document.querySelector("header nav a[data-key='" + e.key + "']");
    if (link) { e.preventDefault(); link.click(); return; }
    if (e.key === "r") { e.preventDefault(); update(); }
    if (e.key === "/") { var s = document.getElementById("search"); if (s) { e.preventDefault(); s.focus(); } }
  });

  wire();
  if (document.getElementById("live")) { schedule(); }
})();
