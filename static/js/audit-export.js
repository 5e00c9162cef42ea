/* Audit export with progress and a completeness check.
 * A plain <a data-export href="/api/v1/records/export?..."> downloads the file without JS.
 * With JS, the click streams the same URL through fetch() + ReadableStream, counts the
 * bytes and rows received into the page's progress line, then asks the export's manifest
 * (the X-Export-Manifest response header) whether everything arrived: the same size and,
 * where the browser offers SHA-256 (https or localhost), the same digest. A complete file
 * is saved; a truncated one is not (the status line says so).
 * The body is a standard file: CSV is the column header then one CRLF-ended row per
 * record, JSON Lines one record per line. Nothing here is inline, so the page's
 * Content-Security-Policy stays strict. */
(function () {
  "use strict";

  var NEWLINE = 10;

  function human(bytes) {
    if (bytes < 1024) return bytes + " B";
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
    return (bytes / (1024 * 1024)).toFixed(1) + " MB";
  }

  function rowsText(rows) {
    return rows.toLocaleString() + (rows === 1 ? " row" : " rows");
  }

  function filenameFrom(response, fallback) {
    var header = response.headers.get("Content-Disposition") || "";
    var match = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(header);
    return match ? decodeURIComponent(match[1]) : fallback;
  }

  async function errorText(response) {
    try {
      var body = await response.json();
      if (body && body.error && body.error.message) return body.error.message;
    } catch (ignored) { /* not JSON: fall through */ }
    return "HTTP " + response.status;
  }

  function save(blob, name) {
    var url = URL.createObjectURL(blob);
    var a = document.createElement("a");
    a.href = url;
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 30000);
  }

  async function sha256Hex(blob) {
    var digest = await window.crypto.subtle.digest("SHA-256", await blob.arrayBuffer());
    return Array.prototype.map.call(new Uint8Array(digest), function (b) {
      return b.toString(16).padStart(2, "0");
    }).join("");
  }

  /* {ok, rows, how} when the manifest confirms the download; {ok: false, text} when it
   * shows a cut-short or altered body; {ok: null, text} when it cannot be checked. */
  async function check(response, blob, bytes, signal) {
    var address = response.headers.get("X-Export-Manifest");
    if (!address) return { ok: null, text: "the server sent no manifest" };
    var url = new URL(address, window.location.href);
    var answer = await fetch(url.pathname + url.search, {
      credentials: "same-origin", headers: { Accept: "application/json" }, signal: signal
    });
    if (!answer.ok) return { ok: null, text: "the manifest answered " + (await errorText(answer)) };
    var manifest = await answer.json();
    if (!manifest.complete || manifest.bytes !== bytes) {
      var expected = manifest.complete ? " of " + human(manifest.bytes) : "";
      return { ok: false, text: "the download was cut short (" + human(bytes) + expected + " received)" };
    }
    if (!(window.crypto && window.crypto.subtle)) {
      return { ok: true, rows: manifest.rows, how: "size checked against the manifest" };
    }
    if ((await sha256Hex(blob)) !== manifest.sha256) {
      return { ok: false, text: "the file differs from what the server sent (SHA-256 mismatch)" };
    }
    return { ok: true, rows: manifest.rows, how: "SHA-256 verified" };
  }

  async function run(link) {
    var panel = link.closest("[data-export-panel]") || document;
    var status = panel.querySelector("[data-export-status]");
    var cancel = panel.querySelector("[data-export-cancel]");
    var links = panel.querySelectorAll("a[data-export]");
    var controller = new AbortController();
    var format = link.dataset.export;
    var headerLines = format === "csv" ? 1 : 0;
    var started = Date.now();
    var bytes = 0;
    var lines = 0;
    var chunks = [];
    function show(text, state) {
      if (!status) return;
      status.textContent = text;
      status.dataset.state = state;
    }
    function progress() {
      var seconds = Math.max((Date.now() - started) / 1000, 0.001);
      show("Exporting " + format.toUpperCase() + "… " + rowsText(Math.max(lines - headerLines, 0)) +
           ", " + human(bytes) + " (" + human(bytes / seconds) + "/s)", "running");
    }
    links.forEach(function (a) { a.setAttribute("aria-disabled", "true"); });
    if (cancel) {
      cancel.hidden = false;
      cancel.onclick = function () { controller.abort(); };
    }
    show("Starting " + format.toUpperCase() + " export…", "running");
    try {
      var response = await fetch(link.href, { credentials: "same-origin", signal: controller.signal });
      if (!response.ok) {
        show("Export failed: " + (await errorText(response)), "error");
        return;
      }
      var reader = response.body.getReader();
      var lastPaint = 0;
      for (;;) {
        var step = await reader.read();
        if (step.done) break;
        chunks.push(step.value);
        bytes += step.value.length;
        for (var i = 0; i < step.value.length; i++) {
          if (step.value[i] === NEWLINE) lines++;
        }
        if (Date.now() - lastPaint > 120) { progress(); lastPaint = Date.now(); }
      }
      var name = filenameFrom(response, "audit-records." + format);
      var blob = new Blob(chunks, { type: response.headers.get("Content-Type") || "application/octet-stream" });
      show("Checking " + name + " against the export's manifest…", "running");
      var result = await check(response, blob, bytes, controller.signal);
      if (result.ok === false) {
        show("Not saved: " + result.text + ". Export again.", "error");
        return;
      }
      save(blob, name);
      if (result.ok) {
        show("Saved " + name + ": " + rowsText(result.rows) + ", " + human(bytes) + " — complete, " +
             result.how + ".", "done");
      } else {
        show("Saved " + name + ": " + human(bytes) + ", but completeness was not checked: " +
             result.text + ".", "error");
      }
    } catch (error) {
      show(error.name === "AbortError" ? "Export cancelled." : "Export failed: " + error.message, "error");
    } finally {
      links.forEach(function (a) { a.removeAttribute("aria-disabled"); });
      if (cancel) cancel.hidden = true;
    }
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-export]");
    if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    if (!window.fetch || !window.ReadableStream || !window.AbortController) return;
    if (link.getAttribute("aria-disabled") === "true") { event.preventDefault(); return; }
    event.preventDefault();
    run(link);
  });
})();
