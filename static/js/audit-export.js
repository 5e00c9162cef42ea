/* Audit export with progress.
 * A plain <a data-export href="/api/v1/records/export?..."> downloads the file without JS.
 * With JS, the click streams the same URL through fetch() + ReadableStream, counts the
 * bytes and lines received into the page's progress line, then saves the result as a file.
 * Nothing here is inline, so the page's Content-Security-Policy stays strict. */
(function () {
  "use strict";

  var NEWLINE = 10;

  function human(bytes) {
    if (bytes < 1024) return bytes + " B";
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
    return (bytes / (1024 * 1024)).toFixed(1) + " MB";
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

  async function run(link) {
    var panel = link.closest("[data-export-panel]") || document;
    var status = panel.querySelector("[data-export-status]");
    var cancel = panel.querySelector("[data-export-cancel]");
    var links = panel.querySelectorAll("a[data-export]");
    var controller = new AbortController();
    var format = link.dataset.export;
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
      show("Exporting " + format.toUpperCase() + "… " + lines.toLocaleString() + " lines, " +
           human(bytes) + " (" + human(bytes / seconds) + "/s)", "running");
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
      save(new Blob(chunks, { type: response.headers.get("Content-Type") || "application/octet-stream" }), name);
      show("Saved " + name + ": " + lines.toLocaleString() + " lines, " + human(bytes) + ".", "done");
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
