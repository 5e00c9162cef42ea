/* Every reviewer page: the nav's pending counter and the tab title.
   The server renders #nav-pending-count (page load, websocket frames) with data-count,
   data-now (its clock, ms) and data-expiries (when the soonest open rows expire, ms). Between
   frames a row stops counting the moment it expires, before the sweep marks it expired; the
   tab title carries the same number. Vanilla JS, no dependencies (CSP: no inline code). */
(function () {
  "use strict";

  var skew = 0;
  var seenStamp = null;

  // The server's clock as this page best knows it: countdowns and the counter agree with
  // the server about when a row expires even if this computer's clock is off.
  function serverNow() { return Date.now() + skew; }
  window.consoleServerNow = serverNow;

  function plainTitle() { return document.title.replace(/^\(\d+\)\s+/, ""); }

  function update() {
    var el = document.getElementById("nav-pending-count");
    if (!el) { return; }
    var stamp = el.getAttribute("data-now");
    if (stamp && stamp !== seenStamp) {
      seenStamp = stamp;
      skew = Number(stamp) - Date.now();
    }
    var count = Number(el.getAttribute("data-count") || 0);
    var now = serverNow();
    (el.getAttribute("data-expiries") || "").split(" ").forEach(function (ms) {
      if (ms && Number(ms) <= now) { count -= 1; }
    });
    count = Math.max(0, count);
    var text = count ? String(count) : "";
    if (el.textContent !== text) { el.textContent = text; }
    var title = (count ? "(" + count + ") " : "") + plainTitle();
    if (document.title !== title) { document.title = title; }
  }
  window.consoleUpdateCounter = update;

  document.addEventListener("DOMContentLoaded", function () {
    update();
    setInterval(update, 1000);
    document.body.addEventListener("htmx:wsAfterMessage", update);
    document.body.addEventListener("htmx:afterSettle", update);
  });
})();
