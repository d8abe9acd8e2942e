// Clocks count down between server updates; the server's deadline stays the truth.
(function () {
  function pad(n) { return String(n).padStart(2, "0"); }
  function format(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    var days = Math.floor(s / 86400); s -= days * 86400;
    var h = Math.floor(s / 3600); s -= h * 3600;
    var m = Math.floor(s / 60); s -= m * 60;
    var clock = h + ":" + pad(m) + ":" + pad(s);
    return days ? days + (days === 1 ? " day, " : " days, ") + clock : clock;
  }
  function tick() {
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var deadline = new Date(el.dataset.deadline);
      var left = el.querySelector(".left");
      if (left) left.textContent = format(deadline - Date.now());
      if (!el.dataset.local) {
        el.title = "Deadline: " + deadline.toLocaleString();
        el.dataset.local = "1";
      }
    });
  }
  // Second shift: grey out the columns the first shift would block.
  function second(form) {
    var after = JSON.parse(form.dataset.blockedAfter || "{}");
    var first = form.querySelector("input[name=first]:checked");
    var blocked = first ? after[first.value] || [] : [];
    form.querySelectorAll("input[name=second]").forEach(function (input) {
      var off = blocked.indexOf(input.value) !== -1;
      input.disabled = off;
      input.parentElement.classList.toggle("blocked", off);
      if (off && input.checked) input.checked = false;
    });
  }
  document.addEventListener("change", function (event) {
    var form = event.target.closest && event.target.closest("#move-form");
    if (form && event.target.name === "first") second(form);
  });
  // New game: show a seat's choice only for the seats the game will have.
  function seats(form) {
    var input = form.querySelector("input[name=seats]");
    var n = parseInt(input && input.value, 10) || 2;
    form.querySelectorAll(".seat-choice").forEach(function (label) {
      label.hidden = parseInt(label.dataset.seat, 10) >= n;
    });
    var note = form.querySelector(".seats-note");
    if (note) note.hidden = true;
  }
  document.addEventListener("input", function (event) {
    var form = event.target.closest && event.target.closest("#new-game");
    if (form) seats(form);
  });
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("new-game");
    if (form) seats(form);
  });
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);
})();
