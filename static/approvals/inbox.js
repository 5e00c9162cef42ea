/* Reviewer inbox and escalation page: expiry countdowns, the order of rows, arrivals
   (highlight, opt-in browser notifications), rows decided elsewhere, selection for bulk
   decisions, keyboard shortcuts, the live-connection indicator (and why it was disconnected),
   and the undo window.

   Undo window: an approval (button, `a`, "Approve selected", and any bulk decision) is held
   here for HOLD_SECONDS before its request leaves; "Undo" (or `u`) drops it and nothing was
   sent. Without this script the forms post at once (a bulk decision is first shown back for
   confirmation by the server). Vanilla JS, no dependencies (CSP: no inline code). */
(function () {
  "use strict";

  var HOLD_SECONDS = 5;
  var DEPART_MS = 4000;
  var RELOAD_AFTER_MS = 1500;
  var NOTIFY_KEY = "approvals.notifications";

  function now() { return window.consoleServerNow ? window.consoleServerNow() : Date.now(); }
  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("#pending-rows tr.esc:not(.departed)"));
  }
  function toolOf(row) { return row.getAttribute("data-tool") || "this call"; }

  function flash(level, text) {
    var box = document.getElementById("flash");
    if (!box) { return; }
    var msg = document.createElement("div");
    msg.className = "msg msg-" + level;
    msg.textContent = text;
    box.replaceChildren(msg);
  }

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
    var t = now();
    document.querySelectorAll(".countdown[data-expires]").forEach(function (el) {
      var left = Date.parse(el.getAttribute("data-expires")) - t;
      el.textContent = formatLeft(left);
      el.classList.toggle("soon", left > 0 && left < 60000);
      var row = el.closest("tr.esc, .decision-box");
      if (row && left <= 0 && !row.classList.contains("expired")) {
        row.classList.add("expired");
        row.querySelectorAll("button, textarea, input").forEach(function (b) { b.disabled = true; });
      }
    });
  }

  // ---- order: soonest expiry first (or newest first), also for rows pushed live --------
  function sortRows() {
    var body = document.getElementById("pending-rows");
    if (!body) { return; }
    var newest = body.getAttribute("data-sort") === "newest";
    var list = Array.prototype.slice.call(body.querySelectorAll("tr.esc"));
    function key(row, name) { return Date.parse(row.getAttribute(name)) || 0; }
    function byId(a, b) { return a.id < b.id ? -1 : a.id > b.id ? 1 : 0; }
    var sorted = list.slice().sort(function (a, b) {
      if (newest) { return key(b, "data-created") - key(a, "data-created") || byId(b, a); }
      return key(a, "data-expires") - key(b, "data-expires") ||
        key(a, "data-created") - key(b, "data-created") || byId(a, b);
    });
    if (sorted.some(function (row, i) { return row !== list[i]; })) {
      sorted.forEach(function (row) { body.appendChild(row); });
    }
  }

  function dedupe() {
    var seen = {};
    document.querySelectorAll("#pending-rows tr.esc").forEach(function (row) {
      if (seen[row.id]) { row.remove(); } else { seen[row.id] = true; }
    });
  }

  // ---- a capped page (CONSOLE_INBOX_ROWS): at most data-cap rows on it; the note says how
  // many more are open; a page left short by decisions asks the socket to refill it ------
  var socket = null;
  var refillAsked = false;
  var refillTimer = null;
  function busy(row) {
    if (row.classList.contains("current") || row.contains(document.activeElement)) { return true; }
    if (holds.some(function (h) { return h.rowId === row.id; })) { return true; }
    if (row.querySelector("details[open], input.pick:checked")) { return true; }
    return Array.prototype.some.call(row.querySelectorAll("textarea, input:not([type=hidden]):not([type=checkbox])"), function (el) {
      return el.value !== el.defaultValue;
    });
  }
  function openTotal() {
    var counter = document.getElementById("nav-pending-count");
    return counter ? parseInt(counter.getAttribute("data-count"), 10) || 0 : 0;
  }
  function capRows() {
    var note = document.getElementById("pending-more");
    if (!note) { return; }
    var cap = parseInt(note.getAttribute("data-cap"), 10) || 0;
    var list = rows();
    // Rows past the cap leave from the end of the order; a row someone is working on stays.
    for (var i = list.length - 1; i >= 0 && list.length > cap; i--) {
      if (!busy(list[i])) { list[i].remove(); list.splice(i, 1); }
    }
    var total = Math.max(openTotal(), list.length);
    note.querySelector(".shown").textContent = String(list.length);
    note.querySelector(".total").textContent = String(total);
    note.hidden = total <= list.length;
    if (list.length >= Math.min(cap, total)) { refillAsked = false; return; }
    // Short: wait for the frames of this change to settle (the counter comes last), then ask
    // once; the re-sync that answers fills the page and clears the flag.
    clearTimeout(refillTimer);
    refillTimer = setTimeout(function () {
      var short = rows().length < Math.min(cap, openTotal());
      if (short && socket && !refillAsked) {
        refillAsked = true;
        socket.send(JSON.stringify({ resync: true }));
      }
    }, 400);
  }

  // ---- selection and what a bulk decision would act on ---------------------------------
  function picked() {
    return rows().filter(function (row) {
      var pick = row.querySelector("input.pick");
      return pick && pick.checked && !pick.disabled;
    });
  }
  function describe(list, max) {
    var names = list.map(function (row) { return toolOf(row) + " (" + row.getAttribute("data-agent") + ")"; });
    var shown = names.slice(0, max).join(", ");
    return names.length > max ? shown + " and " + (names.length - max) + " more" : shown;
  }
  function updateSelection() {
    var list = picked();
    var out = document.getElementById("selected-count");
    if (out) { out.textContent = String(list.length); }
    var tools = document.getElementById("selected-tools");
    if (tools) { tools.textContent = list.length ? ": " + describe(list, 3) : ""; }
    var all = document.getElementById("select-all");
    if (all) { all.checked = list.length > 0 && list.length === rows().length; }
    document.querySelectorAll("#bulk-form button[name=outcome]").forEach(function (b) {
      var verb = b.value === "approve" ? "Approve" : "Reject";
      b.textContent = verb + (list.length ? " " + list.length : "") + " selected";
    });
  }

  // ---- the undo window ------------------------------------------------------------------
  var holds = [];

  function holdFor(rowId, kind) {
    return holds.filter(function (h) { return h.rowId === rowId && h.kind === kind; })[0];
  }

  function placeBar(h) {
    var row = h.rowId ? document.getElementById(h.rowId) : null;
    if (h.rowId) {
      if (!row || row.classList.contains("departed")) { return false; }
      row.classList.add("holding");
      row.querySelector("td.decide").prepend(h.bar);
    } else if (h.kind === "bulk") {
      var bulk = document.getElementById("bulk-form");
      bulk.classList.add("holding");
      bulk.after(h.bar);
    } else {
      var box = document.querySelector(".decision-box");
      box.classList.add("holding");
      box.querySelector("h2").after(h.bar);
    }
    return true;
  }

  function unplace(h) {
    h.bar.remove();
    var host = h.rowId ? document.getElementById(h.rowId)
      : h.kind === "bulk" ? document.getElementById("bulk-form") : document.querySelector(".decision-box");
    if (host && !holds.some(function (o) { return o !== h && o.rowId === h.rowId && o.kind === h.kind; })) {
      host.classList.remove("holding");
    }
  }

  function endHold(h) {
    clearTimeout(h.timer);
    clearInterval(h.ticker);
    holds = holds.filter(function (o) { return o !== h; });
    unplace(h);
  }

  function undo(h) {
    endHold(h);
    flash("info", "Undone: " + h.label + " was not sent.");
    var again = h.rowId ? document.getElementById(h.rowId) : null;
    var button = again && again.querySelector(".approve-button");
    if (button) { button.focus(); }
  }

  function currentForm(h) {
    if (h.kind === "bulk") { return document.getElementById("bulk-form"); }
    if (!h.rowId) { return document.querySelector(".decision-box " + h.selector); }
    var row = document.getElementById(h.rowId);
    if (!row || row.classList.contains("departed") || row.classList.contains("expired")) { return null; }
    return row.querySelector(h.selector);
  }

  function release(h) {
    endHold(h);
    var form = currentForm(h);
    if (!form) { flash("warning", "Not sent: " + h.label + " was decided or expired meanwhile."); return; }
    Object.keys(h.typed).forEach(function (name) {
      if (form.elements[name]) { form.elements[name].value = h.typed[name]; }
    });
    if (h.kind === "bulk") {
      var left = 0;
      form.ownerDocument.querySelectorAll("input.pick").forEach(function (pick) {
        pick.checked = h.ids.indexOf(pick.value) >= 0 && !pick.disabled;
        if (pick.checked) { left += 1; }
      });
      if (!left) { flash("warning", "Not sent: none of the selected is still waiting."); return; }
    }
    // A click, not requestSubmit(): htmx learns which button (outcome) from the click.
    var button = form.querySelector("button[name=outcome][value=" + h.outcome + "]") ||
      form.querySelector("button");
    form.setAttribute("data-released", "");
    button.click();
  }

  function startHold(form, outcome) {
    var kind = form.getAttribute("data-hold");
    var row = form.closest("tr.esc");
    var rowId = row ? row.id : null;
    if (holdFor(rowId, kind)) { return; }
    var typed = {};
    ["reason", "args"].forEach(function (name) {
      if (form.elements[name]) { typed[name] = form.elements[name].value; }
    });
    var h = {
      kind: kind, rowId: rowId, outcome: outcome, typed: typed, ids: [],
      selector: form.classList.contains("edit-form") ? ".edit-form" : ".approve-form",
      endsAt: Date.now() + HOLD_SECONDS * 1000,
    };
    var verb = outcome === "reject" ? "Rejecting" : "Approving";
    if (kind === "bulk") {
      var list = picked();
      h.ids = list.map(function (r) { return r.getAttribute("data-id"); });
      h.label = list.length + " selected";
      h.text = verb + " " + list.length + ": " + describe(list, 10);
    } else {
      var tool = row ? toolOf(row) : (document.querySelector(".detail-head code") || {}).textContent || "this call";
      h.label = "the approval of " + tool;
      h.text = verb + " " + tool + (h.selector === ".edit-form" ? " with edited arguments" : "");
    }
    var bar = document.createElement("div");
    bar.className = "undo-bar";
    bar.setAttribute("role", "status");
    var text = document.createElement("span");
    text.className = "undo-text";
    var count = document.createElement("b");
    count.className = "undo-count";
    count.textContent = String(HOLD_SECONDS);
    text.append(h.text + " in ", count, " s");
    var button = document.createElement("button");
    button.type = "button";
    button.className = "undo-button";
    button.textContent = "Undo";
    button.addEventListener("click", function () { undo(h); });
    var progress = document.createElement("span");
    progress.className = "undo-progress";
    bar.append(text, button, progress);
    h.bar = bar;
    holds.push(h);
    if (!placeBar(h)) { endHold(h); return; }
    button.focus({ preventScroll: true });
    h.ticker = setInterval(function () {
      count.textContent = String(Math.max(0, Math.ceil((h.endsAt - Date.now()) / 1000)));
    }, 250);
    h.timer = setTimeout(function () { release(h); }, HOLD_SECONDS * 1000);
  }

  function onSubmit(event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-hold]")) { return; }
    if (form.hasAttribute("data-released")) { form.removeAttribute("data-released"); return; }
    var submitter = event.submitter;
    var outcome = submitter && submitter.name === "outcome" ? submitter.value
      : form.elements.outcome ? form.elements.outcome.value : "";
    if (form.getAttribute("data-hold") === "bulk") {
      var reasonless = outcome === "reject" && !form.elements.reason.value.trim();
      if (!picked().length || reasonless) { return; }  // the server says what is missing
    } else if (outcome !== "approve") {
      return;
    }
    // Before htmx (listening on the form) or the browser sends anything.
    event.preventDefault();
    event.stopPropagation();
    startHold(form, outcome);
  }

  // After a websocket frame replaced a row: a held approval keeps its bar, or ends if the
  // row was decided by someone else meanwhile.
  function reattach() {
    holds.slice().forEach(function (h) {
      if (!h.rowId || h.bar.isConnected) { return; }
      var row = document.getElementById(h.rowId);
      if (!row || row.classList.contains("departed")) {
        endHold(h);
        flash("warning", "Not sent: someone else decided first (" + h.label + ").");
      } else {
        placeBar(h);
      }
    });
  }

  // ---- arrivals and departures ------------------------------------------------------------
  function storedChoice() {
    try { return window.localStorage.getItem(NOTIFY_KEY); } catch (e) { return null; }
  }
  function storeChoice(value) {
    try { window.localStorage.setItem(NOTIFY_KEY, value); } catch (e) { /* private mode */ }
  }
  function notificationsOn() {
    return "Notification" in window && window.Notification.permission === "granted" && storedChoice() === "on";
  }
  function renderNotifyButton() {
    var button = document.getElementById("notify-toggle");
    if (!button || !("Notification" in window)) { return; }
    button.hidden = false;
    if (window.Notification.permission === "denied") {
      button.disabled = true;
      button.textContent = "Notifications blocked by the browser";
      button.setAttribute("aria-pressed", "false");
      return;
    }
    var on = notificationsOn();
    button.textContent = on ? "Notifications on" : "Turn on notifications";
    button.setAttribute("aria-pressed", on ? "true" : "false");
    button.title = on ? "New escalations for you raise a browser notification. Click to stop."
      : "Get a browser notification when a new escalation for you arrives.";
  }
  function toggleNotifications() {
    if (window.Notification.permission === "granted") {
      storeChoice(notificationsOn() ? "off" : "on");
      renderNotifyButton();
      return;
    }
    window.Notification.requestPermission().then(function (permission) {
      if (permission === "granted") { storeChoice("on"); }
      renderNotifyButton();
    });
  }

  function notify(row) {
    if (!notificationsOn()) { return; }
    var countdown = row.querySelector(".countdown");
    var why = row.querySelector(".why .small:not(.muted)");
    var body = row.getAttribute("data-agent") + (why ? " · " + why.textContent.trim() : "") +
      (countdown ? " · " + countdown.textContent + " left" : "");
    try {
      var note = new window.Notification("Approval needed: " + toolOf(row), {
        body: body, tag: "escalation-" + row.getAttribute("data-id"),
      });
      note.onclick = function () {
        window.focus();
        var list = rows();
        var again = document.getElementById(row.id);
        if (again) { setCurrent(list.indexOf(again)); }
        note.close();
      };
    } catch (e) { /* some browsers allow notifications only from a service worker */ }
  }

  function arrivals() {
    document.querySelectorAll("#pending-rows tr.esc.arrived:not([data-seen])").forEach(function (row) {
      row.setAttribute("data-seen", "");
      notify(row);
    });
    document.querySelectorAll("#pending-rows tr.esc.departed:not([data-leaving])").forEach(function (row) {
      row.setAttribute("data-leaving", "");
      setTimeout(function () { row.remove(); updateSelection(); }, DEPART_MS);
    });
  }

  // ---- keyboard ---------------------------------------------------------------------------
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
    if (!document.getElementById("pending-rows")) {
      if (event.key === "u" && holds.length) { undo(holds[holds.length - 1]); event.preventDefault(); }
      return;
    }
    var row;
    switch (event.key) {
      case "j": setCurrent(current + 1); break;
      case "k": setCurrent(current - 1); break;
      case "a":
        row = currentRow();
        if (row && !row.classList.contains("holding") && row.querySelector(".approve-button")) {
          row.querySelector(".approve-button").click();
        }
        break;
      case "u":
        if (holds.length) { undo(holds[holds.length - 1]); }
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
      case "Enter":
        if (tag === "a" || tag === "button" || tag === "summary") { return; }
        row = currentRow();
        if (row && row.querySelector(".tool-link")) { window.location.href = row.querySelector(".tool-link").href; }
        break;
      default: return;
    }
    event.preventDefault();
  }

  // ---- what the reviewer was doing survives frames that re-render rows -------------------
  // A re-sync (on every socket (re)connect) replaces every row and another reviewer's vote
  // replaces one: open panels, typed text, ticked boxes, the keyboard's current row and the
  // focus carry over to the new row with the same id.
  var kept = null;
  function fieldKey(el) {
    var holder = el.closest("form, details");
    return (holder ? holder.className : "") + "|" + el.tagName + "|" + (el.name || el.className);
  }
  // A row frame (updated, departed, removed) for a row this page does not show, one past a
  // capped page's last, has nothing to swap: dropped before htmx looks for its target.
  var ROW_FRAME = /^<tr id="(esc-[0-9a-f-]+)"/;
  function dropOffPage(event) {
    var found = ROW_FRAME.exec(event.detail.message || "");
    if (found && !document.getElementById(found[1])) { event.preventDefault(); }
  }
  function keepState(event) {
    if (event.defaultPrevented) { return; }
    kept = {};
    document.querySelectorAll("#pending-rows tr.esc:not(.departed)").forEach(function (row) {
      var state = { el: row, open: [], values: {}, current: row.classList.contains("current"), focus: null };
      row.querySelectorAll("details[open]").forEach(function (d) { state.open.push(d.className); });
      row.querySelectorAll("textarea, input:not([type=hidden])").forEach(function (el) {
        var box = el.type === "checkbox";
        if (box ? el.checked !== el.defaultChecked : el.value !== el.defaultValue) {
          state.values[fieldKey(el)] = box ? el.checked : el.value;
        }
        if (el === document.activeElement) {
          state.focus = { key: fieldKey(el), start: box ? null : el.selectionStart, end: box ? null : el.selectionEnd };
        }
      });
      kept[row.id] = state;
    });
  }
  function restoreState() {
    var states = kept;
    kept = null;
    if (!states) { return; }
    Object.keys(states).forEach(function (id) {
      var state = states[id], row = document.getElementById(id);
      if (!row || row === state.el || row.classList.contains("departed")) { return; }
      row.querySelectorAll("details").forEach(function (d) {
        if (state.open.indexOf(d.className) >= 0) { d.open = true; }
      });
      row.querySelectorAll("textarea, input:not([type=hidden])").forEach(function (el) {
        var key = fieldKey(el);
        if (Object.prototype.hasOwnProperty.call(state.values, key) && !el.disabled) {
          if (el.type === "checkbox") { el.checked = state.values[key]; } else { el.value = state.values[key]; }
        }
        if (state.focus && state.focus.key === key) {
          el.focus({ preventScroll: true });
          if (state.focus.start !== null) { el.setSelectionRange(state.focus.start, state.focus.end); }
        }
      });
      if (state.current) { row.classList.add("current"); }
    });
  }

  function liveState(text, ok) {
    var el = document.getElementById("live-state");
    if (el) { el.textContent = text; el.classList.toggle("ok", ok); }
  }

  function afterChange() {
    restoreState();
    dedupe();
    sortRows();
    arrivals();  // every arrival may notify, one the cap trims from the page too
    capRows();
    reattach();
    tick();
    updateSelection();
  }

  document.addEventListener("submit", onSubmit, true);
  window.addEventListener("beforeunload", function (event) {
    if (holds.length) { event.preventDefault(); event.returnValue = ""; }
  });

  document.addEventListener("DOMContentLoaded", function () {
    tick();
    setInterval(tick, 1000);
    renderNotifyButton();
    var toggle = document.getElementById("notify-toggle");
    if (toggle) { toggle.addEventListener("click", toggleNotifications); }
    document.addEventListener("keydown", onKey);
    document.addEventListener("change", function (event) {
      if (event.target.id === "select-all") {
        rows().forEach(function (row) {
          var pick = row.querySelector("input.pick");
          if (pick && !pick.disabled) { pick.checked = event.target.checked; }
        });
      }
      updateSelection();
    });
    // "live" once the socket's first frame (the re-sync) is on the page, not at the open.
    var syncing = false;
    document.body.addEventListener("htmx:wsOpen", function (event) {
      socket = event.detail.socketWrapper;
      refillAsked = false;
      syncing = true;
      liveState("syncing…", false);
    });
    document.body.addEventListener("htmx:wsBeforeMessage", dropOffPage);
    document.body.addEventListener("htmx:wsBeforeMessage", keepState);
    document.body.addEventListener("htmx:wsAfterMessage", function () {
      if (syncing) { syncing = false; liveState("live", true); }
    });
    document.body.addEventListener("htmx:wsClose", function (event) {
      socket = null;
      var code = event.detail && event.detail.event ? event.detail.event.code : 0;
      // approvals/socket_access.py: 4401 the session ended, 4403 the role or scope shrank.
      // Drop what this page shows, say why, and reload: the login page, or the inbox as it
      // is now.
      if (code === 4401 || code === 4403) {
        holds.slice().forEach(endHold);
        var body = document.getElementById("pending-rows");
        if (body) { body.innerHTML = ""; }
        liveState(code === 4401 ? "signed out" : "access changed", false);
        flash("warning", code === 4401
          ? "Disconnected: your session has ended (signed out, expired or deactivated). Opening the login page…"
          : "Disconnected: your access has changed. Reloading…");
        setTimeout(function () { window.location.reload(); }, RELOAD_AFTER_MS);
        return;
      }
      liveState("reconnecting…", false);
    });
    document.body.addEventListener("htmx:wsAfterMessage", afterChange);
    document.body.addEventListener("htmx:afterSwap", afterChange);
    sortRows();
    updateSelection();
  });
})();
