// Finish times: the server writes UTC; show them in the reader's own time zone.
(function () {
  var format = { dateStyle: "medium", timeStyle: "short" };
  function localise(root) {
    (root || document).querySelectorAll("time[datetime]:not([data-local])").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (isNaN(when)) return;
      el.title = el.textContent.trim();
      el.textContent = when.toLocaleString(undefined, format);
      el.dataset.local = "1";
    });
  }
  document.addEventListener("DOMContentLoaded", function () { localise(document); });
  document.addEventListener("htmx:load", function (event) { localise(event.target); });
})();
