// Replay: the arrow keys step, Home and End jump, Play steps on by itself at the chosen speed
// (0.25x to 4x of a move every 800 ms). Each step asks the server for the board at that move
// (the same links work without this script, or without htmx).
(function () {
  var DELAY_MS = 800;
  var speed = 1;
  var wanted = null; // the move asked for by keys or Play while a request is on its way
  var busy = false;
  var timer = null;

  function step() { return document.getElementById("step"); }
  function current() { var s = step(); return s ? parseInt(s.dataset.ply, 10) : 0; }
  function last() { var s = step(); return s ? parseInt(s.dataset.last, 10) : 0; }
  function playing() { return timer !== null; }

  function urlFor(ply) {
    var s = step();
    var replay = document.getElementById("replay");
    var params = new URLSearchParams({ ply: String(ply) });
    if (s.dataset.view && s.dataset.view !== "all") params.set("view", s.dataset.view);
    return replay.dataset.base + "?" + params.toString();
  }

  function go(ply) {
    ply = Math.max(0, Math.min(last(), ply));
    wanted = ply;
    if (busy || ply === current()) return;
    if (!window.htmx) { window.location.href = urlFor(ply); return; }
    busy = true;
    var url = urlFor(ply);
    window.htmx.ajax("GET", url, { target: "#step", swap: "outerHTML" }).then(function () {
      busy = false;
      history.replaceState(history.state, "", url);
      if (wanted !== null && wanted !== current()) go(wanted);
    }, function () { busy = false; });
  }

  function stop() {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    sync();
  }
  function tick() {
    if (current() >= last()) { stop(); return; }
    go(current() + 1);
    timer = setTimeout(tick, DELAY_MS / speed);
  }
  function play() {
    if (current() >= last()) go(0);
    timer = setTimeout(tick, current() >= last() ? DELAY_MS / speed : 0);
    sync();
  }

  // After every swap (the new step arrives with a hidden "Play" button, so this runs in the same
  // task as the swap, not at settle): the Play button's label, and the move marked in the log.
  function sync() {
    var button = document.getElementById("play");
    if (button) {
      button.hidden = false;
      button.textContent = playing() ? "Pause" : "Play";
      button.setAttribute("aria-pressed", playing() ? "true" : "false");
    }
    var control = document.getElementById("speed-control");
    if (control) {
      control.hidden = false;
      document.getElementById("speed").value = String(speed);
    }
    var ply = String(current());
    document.querySelectorAll("#log a[data-ply]").forEach(function (a) {
      if (a.dataset.ply === ply) {
        a.setAttribute("aria-current", "step");
        var box = a.closest("ol");
        if (box && box.scrollHeight > box.clientHeight) {
          box.scrollTop = a.offsetTop - box.offsetTop - box.clientHeight / 2;
        }
      } else {
        a.removeAttribute("aria-current");
      }
    });
  }

  document.addEventListener("keydown", function (event) {
    if (!step() || event.altKey || event.ctrlKey || event.metaKey) return;
    var t = event.target;
    if (t && t.closest && t.closest("input, select, textarea, [contenteditable]")) return;
    var base = wanted !== null && busy ? wanted : current();
    var moves = { ArrowRight: base + 1, ArrowLeft: base - 1, Home: 0, End: last() };
    if (!(event.key in moves)) return;
    event.preventDefault();
    if (playing()) stop();
    go(moves[event.key]);
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("#play");
    if (!button) return;
    if (playing()) stop(); else play();
  });

  document.addEventListener("change", function (event) {
    if (event.target.id !== "speed") return;
    speed = parseFloat(event.target.value) || 1;
    if (playing()) { clearTimeout(timer); timer = setTimeout(tick, DELAY_MS / speed); }
  });

  document.addEventListener("htmx:afterSwap", sync);
  document.addEventListener("DOMContentLoaded", sync);
})();
