/* Progressive help for forms with errors: focus moves to the first field in error (or the
   form's error summary) when a page or an htmx swap shows one, and a field's error clears as
   soon as its value differs from the value that was refused (the server checks it again on
   submit; putting the refused value back shows the error again). */
(function () {
  "use strict";
  var CONTROLS = "input:not([type=hidden]), select, textarea";

  function visible(element) { return !!(element.offsetWidth || element.offsetHeight || element.getClientRects().length); }

  function remember(root) {
    root.querySelectorAll(".field-invalid").forEach(function (field) {
      field.querySelectorAll(CONTROLS).forEach(function (control) {
        if (!("refused" in control.dataset)) { control.dataset.refused = control.value; }
      });
    });
  }

  function focusFirst(root) {
    var target = null;
    root.querySelectorAll(".field-invalid").forEach(function (field) {
      if (target) { return; }
      field.querySelectorAll(CONTROLS).forEach(function (control) {
        if (!target && !control.disabled && visible(control)) { target = control; }
      });
    });
    if (!target) {
      target = root.querySelector(".form-errors[role=alert], .pointer-problems");
      if (target && !target.hasAttribute("tabindex")) { target.setAttribute("tabindex", "-1"); }
    }
    if (target) { target.focus({ preventScroll: false }); }
  }

  function onEdit(event) {
    var control = event.target;
    var field = control.closest && control.closest(".field");
    if (!field || !("refused" in control.dataset)) { return; }
    var fixed = control.value !== control.dataset.refused;
    field.classList.toggle("field-invalid", !fixed);
    field.querySelectorAll(".errorlist").forEach(function (list) { list.hidden = fixed; });
    if (fixed) { control.removeAttribute("aria-invalid"); } else { control.setAttribute("aria-invalid", "true"); }
  }

  function typing() {
    var active = document.activeElement;
    return !!active && (active.tagName === "TEXTAREA" || (active.tagName === "INPUT" && active.type !== "submit"));
  }

  function prepare(root) {
    remember(root);
    if (!typing()) { focusFirst(root); }
  }

  document.addEventListener("input", onEdit);
  document.addEventListener("change", onEdit);
  /* After a swap: the swapped element, or the page when it was replaced (outerHTML). */
  document.addEventListener("htmx:afterSettle", function (event) {
    var root = event.target && event.target.isConnected ? event.target : document;
    if (root.querySelector && root.querySelector(".field-invalid, .form-errors")) { prepare(root); }
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { prepare(document); });
  } else { prepare(document); }
})();
