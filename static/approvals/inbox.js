/* Reviewer inbox: expiry countdowns, selection for bulk decisions, keyboard shortcuts,
   and the live-connection indicator. Vanilla JS, no dependencies (CSP: no inline code). */
(function () {
  "use strict";

  function rows() { return Array.prototype.slice.call(document.querySelectorAll("#pending-rows tr.esc")); }

  function formatLeft(ms) {
    if (ms <= 0) { return "expired"; }
    var s = Math.floor(ms / 1000);
    var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    if (d) { return d + "d " + h + "h"; }
    if (h) { return h + "h " + (m < 10 ? "0" : "") + m + "m"; }
    var sec = s % 60;
    return m + ":" + (sec < 10 ? "0" : "") + sec;
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll(".countdown[data-expires]").forEach(function (el) {
      var left = Date.parse(el.getAttribute("data-expires")) - now;
      el.textContent = formatLeft(left);
      el.classList.toggle("soon", left > 0 && left < 60000);
      var row = el.closest("tr.esc");
      if (row && left <= 0 && !row.classList.contains("expired")) {
        row.classList.add("expired");
        row.querySelectorAll("button, textarea, input").forEach(function (b) { b.disabled = true; });
      }
    });
  }

  function dedupe() {
    var seen = {};
    rows().forEach(function (row) {
      if (seen[row.id]) { row.remove(); } else { seen[row.id] = true; }
    });
  }

  function updateSelection() {
    var picked = document.querySelectorAll("#pending-rows input.pick:checked").length;
    var out = document.getElementById("selected-count");
    if (out) { out.textContent = String(picked); }
    var all = document.getElementById("select-all");
    if (all) { all.checked = picked > 0 && picked === rows().length; }
  }

  var current = -1;
  function setCurrent(index) {
    var list = rows();
    if (!list.length) { current = -1; return; }
    current = Math.max(0, Math.min(index, list.length - 1));
    list.forEach(function (row, i) { row.classList.toggle("current", i === current); });
    var row = list[current];
    row.setAttribute("tabindex", "-1");
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
  }
  function currentRow() {
    var list = rows();
    var marked = list.findIndex(function (row) { return row.classList.contains("current"); });
    if (marked >= 0) { current = marked; return list[marked]; }
    if (list.length) { setCurrent(0); return list[0]; }
    return null;
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select") {
      if (event.key === "Escape") { event.target.blur(); }
      return;
    }
    var row;
    switch (event.key) {
      case "j": setCurrent(current + 1); break;
      case "k": setCurrent(current - 1); break;
      case "a":
        row = currentRow();
        if (row && row.querySelector(".approve-button")) { row.querySelector(".approve-button").click(); }
        break;
      case "r":
        row = currentRow();
        if (row && row.querySelector(".reject-reason")) { row.querySelector(".reject-reason").focus(); }
        break;
      case "e":
        row = currentRow();
        var details = row && row.querySelector("details.edit");
        if (details) { details.open = true; details.querySelector("textarea").focus(); }
        break;
      case "x":
        row = currentRow();
        var pick = row && row.querySelector("input.pick");
        if (pick) { pick.checked = !pick.checked; updateSelection(); }
        break;
      default: return;
    }
    event.preventDefault();
  }

  function liveState(text, ok) {
    var el = document.getElementById("live-state");
    if (el) { el.textContent = text; el.classList.toggle("ok", ok); }
  }

  document.addEventListener("DOMContentLoaded", function () {
    tick();
    setInterval(tick, 1000);
    document.addEventListener("keydown", onKey);
    document.addEventListener("change", function (event) {
      if (event.target.id === "select-all") {
        document.querySelectorAll("#pending-rows input.pick").forEach(function (p) { p.checked = event.target.checked; });
      }
      updateSelection();
    });
    document.body.addEventListener("htmx:wsOpen", function () { liveState("live", true); });
    document.body.addEventListener("htmx:wsClose", function (event) {
      var code = event.detail && event.detail.event ? event.detail.event.code : 0;
      // approvals/socket_access.py: 4401 the session ended, 4403 the role or scope shrank.
      // Drop what this page shows and reload: the login page, or the inbox as it is now.
      if (code === 4401 || code === 4403) {
        var body = document.getElementById("pending-rows");
        if (body) { body.innerHTML = ""; }
        liveState(code === 4401 ? "signed out" : "access changed", false);
        window.location.reload();
        return;
      }
      liveState("reconnecting…", false);
    });
    document.body.addEventListener("htmx:wsAfterMessage", function () { dedupe(); tick(); updateSelection(); });
    document.body.addEventListener("htmx:afterSwap", function () { tick(); updateSelection(); });
  });
})();
