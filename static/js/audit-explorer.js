// The record explorer (/audit/): a period is either a relative range or since/until, so
// choosing one clears the other before the form is sent (the server refuses both, naming
// `range`); on a narrow screen the facets start folded above the results and the histogram
// shows its newest end.
(function () {
  "use strict";

  function form() {
    return document.querySelector("form[data-explorer-form]");
  }

  // Capture phase: runs before htmx sends the form on the select's change.
  document.addEventListener(
    "change",
    function (event) {
      var target = event.target;
      var f = form();
      if (!f || !target || target.form !== f) return;
      if (target.matches("select[data-range]") && target.value) {
        ["since", "until"].forEach(function (name) {
          if (f.elements[name]) f.elements[name].value = "";
        });
      }
    },
    true
  );

  document.addEventListener("input", function (event) {
    var target = event.target;
    var f = form();
    if (!f || !target || target.form !== f) return;
    if ((target.name === "since" || target.name === "until") && target.value) {
      var range = f.querySelector("select[data-range]");
      if (range) range.value = "";
    }
  });

  function foldFacets(root) {
    if (!window.matchMedia("(max-width: 640px)").matches) return;
    // The histogram's plot scrolls sideways on a phone (its count axis stays): start at
    // its newest end.
    (root || document).querySelectorAll("figure.histogram .hist-scroll").forEach(function (plot) {
      plot.scrollLeft = plot.scrollWidth;
    });
    (root || document).querySelectorAll("details[data-facets]").forEach(function (details) {
      details.open = false;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    foldFacets(document);
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    foldFacets(event.detail && event.detail.elt ? event.detail.elt.parentNode : document);
  });
})();
