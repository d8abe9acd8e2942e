document.documentElement.classList.add("js"); // what only a page without JavaScript needs hides

// Times: the server writes them in UTC (games/ui/tags.py time_text), and each is shown here in
// the viewer's own time zone, in the same format: "Thu 3 Apr 2025, 15:31 CEST". The UTC time
// stays in the title.
(function () {
  var format = new Intl.DateTimeFormat("en-GB", {
    weekday: "short", day: "numeric", month: "short", year: "numeric",
    hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short"
  });
  function text(when) {
    var p = {};
    format.formatToParts(when).forEach(function (part) { p[part.type] = part.value; });
    return p.weekday + " " + p.day + " " + p.month + " " + p.year + ", " + p.hour + ":" + p.minute + " " + p.timeZoneName;
  }
  function localise(root) {
    (root || document).querySelectorAll("time[datetime]:not([data-local])").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (isNaN(when)) return;
      el.textContent = text(when);
      el.dataset.local = "1";
    });
  }
  document.addEventListener("DOMContentLoaded", function () { localise(document); });
  document.addEventListener("htmx:load", function (event) { localise(event.target); });
})();

// A request that failed (a 5xx, a 429, no answer, too slow) is never swapped in: the page keeps
// what it shows, and #request-error says what happened until a later request succeeds.
(function () {
  var SHOWN_MS = 3000; // at least this long, though a poll succeeds at once
  var shownAt = 0, timer = null;
  function region() { return document.getElementById("request-error"); }
  function show(text) {
    var el = region();
    if (!el) return;
    clearTimeout(timer);
    timer = null;
    el.textContent = text;
    shownAt = performance.now();
  }
  function clear() {
    var el = region();
    if (!el || !el.textContent || timer) return;
    var left = SHOWN_MS - (performance.now() - shownAt);
    if (left > 0) {
      timer = setTimeout(function () { timer = null; clear(); }, left);
      return;
    }
    el.textContent = "";
  }
  function failed(xhr) {
    var status = xhr ? xhr.status : 0;
    var type = (xhr && xhr.getResponseHeader("Content-Type")) || "";
    if (status >= 400 && status < 500 && type.indexOf("text/plain") === 0 && xhr.responseText) {
      return xhr.responseText.slice(0, 300); // the server's sentence (a 429: what, and when to retry)
    }
    if (status >= 500) {
      return "The server failed to answer (error " + status + "). Nothing has changed here: try again in a moment.";
    }
    if (status === 403) {
      return "The site refused this (error 403): reload the page and try again.";
    }
    return "That did not work (error " + status + "). Reload the page and try again.";
  }
  // A sentence alone (a request no page takes: a 400 before any view) is never swapped in for
  // part of the page, as a form's 400 is: it is an error, said in the error line.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    var type = xhr.getResponseHeader("Content-Type") || "";
    if (xhr.status >= 400 && type.indexOf("text/plain") === 0) {
      event.detail.shouldSwap = false;
      event.detail.isError = true;
    }
  });
  document.addEventListener("htmx:responseError", function (event) {
    show(failed(event.detail.xhr));
  });
  document.addEventListener("htmx:sendError", function () {
    show("The server cannot be reached. Check your connection; the page tries again by itself.");
  });
  document.addEventListener("htmx:timeout", function () {
    show("The server took too long to answer. Nothing has changed here: try again in a moment.");
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.successful) clear();
  });
  // A guest's private link: one click selects all of it, ready to copy.
  document.addEventListener("click", function (event) {
    if (event.target.classList && event.target.classList.contains("private-link")) event.target.select();
  });
})();

// A list that puts its filters in the address (the archive's) asks again only for another
// address: a field left (its change) and then Filter would ask twice for the same list, and
// push it twice, so that the first Back went nowhere.
document.addEventListener("htmx:configRequest", function (event) {
  var detail = event.detail;
  if (detail.verb !== "get" || !detail.elt.hasAttribute("hx-push-url")) return;
  var query = [];
  detail.formData.forEach(function (value, key) { // as htmx writes it (its urlEncode)
    query.push(encodeURIComponent(key) + "=" + encodeURIComponent(value));
  });
  var path = detail.path + (query.length ? (detail.path.indexOf("?") < 0 ? "?" : "&") + query.join("&") : "");
  var url = new URL(path, location.href);
  if (url.href === location.href) event.preventDefault();
});

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
  // Time left on a clock: to its deadline, less the weekends off still to come (data-stops,
  // [[start, end], ...]), in which it stands still and says so.
  function tick() {
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var now = Date.now();
      var deadline = Date.parse(el.dataset.deadline);
      var ms = deadline - now;
      var stopped = false;
      JSON.parse(el.dataset.stops || "[]").forEach(function (stop) {
        var start = Date.parse(stop[0]), end = Date.parse(stop[1]);
        ms -= Math.max(0, Math.min(end, deadline) - Math.max(start, now));
        if (start <= now && now < end) stopped = true;
      });
      var left = el.querySelector(".left");
      if (left) left.textContent = format(ms);
      var note = el.querySelector(".stopped");
      if (note) note.hidden = !stopped;
    });
  }
  // Second shift: grey out the columns the first shift would block, and say why
  // (#second-blocked, which describes each of them).
  function second(form) {
    var after = JSON.parse(form.dataset.blockedAfter || "{}");
    var first = form.querySelector("input[name=first]:checked");
    var blocked = first ? after[first.value] || [] : [];
    form.querySelectorAll("input[name=second]").forEach(function (input) {
      var off = blocked.indexOf(input.value) !== -1;
      input.disabled = off;
      input.parentElement.classList.toggle("blocked", off);
      if (off) input.setAttribute("aria-describedby", "second-blocked");
      else input.removeAttribute("aria-describedby");
      if (off && input.checked) input.checked = false;
    });
    var why = document.getElementById("second-blocked");
    if (why) why.hidden = !blocked.length;
  }
  document.addEventListener("change", function (event) {
    var form = event.target.closest && event.target.closest("#move-form");
    if (form && event.target.name === "first") second(form);
  });
  // New game: show a seat's choice only for the seats the game will have, and a clock's
  // options only for a clock that takes them (a live race keeps its own: they are not sent).
  function seats(form) {
    var input = form.querySelector("input[name=seats]");
    var n = parseInt(input && input.value, 10) || 2;
    form.querySelectorAll(".seat-choice").forEach(function (field) {
      field.hidden = parseInt(field.dataset.seat, 10) >= n;
    });
    var note = form.querySelector(".seats-note");
    if (note) note.hidden = true;
    var race = form.querySelector("select[name=race]");
    var live = !!race && race.value === "live";
    form.querySelectorAll(".clock-option").forEach(function (field) {
      field.hidden = live;
      field.querySelectorAll("input, select").forEach(function (control) { control.disabled = live; });
    });
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

// Maze Race. Countdowns count between server updates; the server's times stay the truth.
// Steering: arrow keys, WASD, the buttons (held or clicked) or a swipe on the maze. A held key
// keeps stepping: the next step is sent when the last one has landed (the page says in how
// many ms), so at most one step is ever waiting, as the server allows. Each step carries the
// runner's step number from the page (the form's `step`); one request is in flight at a time,
// and a number the server has taken already is refused there, so no step is ever doubled.
(function () {
  var KEYS = {
    ArrowUp: "N", ArrowRight: "E", ArrowDown: "S", ArrowLeft: "W",
    w: "N", d: "E", s: "S", a: "W", W: "N", D: "E", S: "S", A: "W"
  };
  var WORDS = { N: "north", E: "east", S: "south", W: "west" };
  var race = {
    held: null, queued: null, busy: false, readyAt: 0, timer: null,
    note: "", noteUntil: 0
  };

  function timers() {
    var now = performance.now();
    document.querySelectorAll("[data-countdown-ms]").forEach(function (el) {
      if (!el.dataset.until) el.dataset.until = String(now + parseInt(el.dataset.countdownMs, 10));
      var left = parseFloat(el.dataset.until) - now;
      var shown = el.querySelector(".left");
      if (left <= 0) {
        if (el.dataset.done && !el.dataset.finished) {
          el.textContent = el.dataset.done;
          el.dataset.finished = "1";
        }
      } else if (shown) {
        shown.textContent = String(Math.ceil(left / 1000));
      }
    });
    document.querySelectorAll("[data-elapsed-ms]").forEach(function (el) {
      if (!el.dataset.since) el.dataset.since = String(now - parseInt(el.dataset.elapsedMs, 10));
      el.textContent = String(Math.floor((now - parseFloat(el.dataset.since)) / 1000));
    });
  }
  setInterval(timers, 100);
  document.addEventListener("DOMContentLoaded", timers);

  function steer() { return document.getElementById("steer"); }
  // A slow race (fewest steps wins) takes one step a press: a held key or button does not
  // repeat there.
  function live() { var form = steer(); return !!form && form.dataset.live === "1"; }

  // A refused step's message stays for a moment, across the page's swaps.
  function note(text) {
    if (text) {
      race.note = text;
      race.noteUntil = performance.now() + 2500;
    }
    var el = document.getElementById("steer-note");
    var shown = performance.now() < (race.noteUntil || 0) ? race.note : "";
    if (!el) return;
    el.textContent = shown;
    el.hidden = !shown;
  }

  function send() {
    var form = steer();
    if (!form || race.busy) return;
    var dir = race.queued || race.held;
    if (!dir) return;
    var wait = race.readyAt - performance.now();
    if (wait > 0) {
      clearTimeout(race.timer);
      race.timer = setTimeout(send, wait);
      return;
    }
    race.queued = null;
    var button = form.querySelector('button[name=dir][value="' + dir + '"]');
    if (button && button.disabled) {
      race.held = null;
      note("There is a wall to the " + WORDS[dir] + ".");
      return;
    }
    race.busy = true;
    race.noteUntil = 0;
    var done = function () {
      race.busy = false;
      if (race.held || race.queued) send();
    };
    var step = form.elements.step ? form.elements.step.value : "";
    htmx.ajax("POST", form.getAttribute("action"), {
      source: form, target: "#game", swap: "outerHTML", values: { dir: dir, step: step }
    }).then(done, done);
  }

  function want(dir, hold) {
    if (!steer()) return false;
    if (hold && live()) race.held = dir;
    else race.queued = dir;
    send();
    return true;
  }

  // The page (after a step, a poll or a load) says when this runner's last step lands, or
  // when the race starts: the next step is sent then.
  function learn() {
    var form = steer();
    if (!form) return;
    var landedIn = parseInt(form.dataset.landedIn || "0", 10);
    race.readyAt = Math.max(race.readyAt, performance.now() + landedIn);
    // The site's refusal of a step, drawn in the page: shown for the moment a note is.
    var refused = document.getElementById("steer-note");
    note(refused && !refused.hidden ? refused.textContent : "");
    timers();
  }
  document.addEventListener("htmx:afterSwap", learn);
  document.addEventListener("DOMContentLoaded", learn);

  // When the race is on for this runner (the countdown begins, after the Ready button further
  // down, or by a poll while this runner waits for the others; or the page is loaded, or
  // reloaded, while it runs) its maze and the steering pad beside or under it (with the Hint)
  // are brought into view if they are not: on a phone they do not fit on one screen with the
  // page's head. The maze alone if both do not fit.
  var phase;  // undefined until the page is loaded
  function started() {
    var board = document.getElementById("board");
    var was = phase;
    phase = board ? board.dataset.phase : null;
    var maze = document.getElementById("maze-board");
    var form = steer();
    var racing = (phase === "countdown" || phase === "running") && !!maze && !!form;
    // A reload would put the page back where it was, over this scroll, and the page above the
    // maze may not be what it was (a deadline come): not while racing.
    if (board && "scrollRestoration" in history) history.scrollRestoration = racing ? "manual" : "auto";
    if (!racing || (was !== undefined && was !== "ready")) return;
    var high = window.innerHeight;
    var box = maze.getBoundingClientRect();
    var top = box.top, bottom = box.bottom;
    var row = form.querySelector(".steer-row");
    if (row) {
      var pad = row.getBoundingClientRect();
      var both = { top: Math.min(top, pad.top), bottom: Math.max(bottom, pad.bottom) };
      if (both.bottom - both.top <= high) { top = both.top; bottom = both.bottom; }
    }
    if (top >= 0 && bottom <= high) return;
    // Its bottom at the screen's, so that the status line above (the countdown, the deadline)
    // shows too if it can; its top, if it is taller. Whole pixels: no fraction left out.
    window.scrollBy(0, bottom - top > high ? Math.floor(top) : Math.ceil(bottom - high));
  }
  document.addEventListener("htmx:afterSettle", started);
  document.addEventListener("DOMContentLoaded", started);

  // A poll answered before a step and delivered after it must not put the runner back.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (!target || target.id !== "game" || !target.dataset.version) return;
    var match = /data-version="(\d+)"/.exec(event.detail.serverResponse || "");
    if (match && parseInt(match[1], 10) < parseInt(target.dataset.version, 10)) {
      event.detail.shouldSwap = false;
    }
  });

  document.addEventListener("keydown", function (event) {
    var dir = KEYS[event.key];
    if (!dir || event.altKey || event.ctrlKey || event.metaKey) return;
    var tag = event.target && event.target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
    if (!steer()) return;
    event.preventDefault();
    if (live()) race.held = dir;
    else if (event.repeat) return;
    if (!event.repeat) race.queued = dir;
    send();
  });
  document.addEventListener("keyup", function (event) {
    if (KEYS[event.key] && KEYS[event.key] === race.held) race.held = null;
  });

  // The buttons: a press is one step; held down past HOLD_MS (a tap on a phone lasts up to
  // about 200 ms, and a step takes 250) it keeps stepping. The click a press makes is no more
  // steps; a click from the keyboard (Enter or Space, detail 0) is one. A press's click comes
  // as its own task after the pointerup, sometimes after other timers have run, so it is told
  // by the time since the press was let go, not by the order of events.
  var HOLD_MS = 300, CLICK_AFTER_MS = 1000;
  var press = { dir: null, timer: null, releasedAt: -Infinity };
  document.addEventListener("pointerdown", function (event) {
    var button = event.target.closest && event.target.closest("#steer button[name=dir]");
    if (!button || button.disabled) return;
    press.dir = button.value;
    press.releasedAt = Infinity;
    clearTimeout(press.timer);
    if (live()) {
      press.timer = setTimeout(function () {
        if (press.dir) want(press.dir, true);
      }, HOLD_MS);
    }
    want(button.value, false);
  });
  ["pointerup", "pointercancel"].forEach(function (name) {
    document.addEventListener(name, function () {
      if (!press.dir) return;
      clearTimeout(press.timer);
      press.dir = null;
      press.releasedAt = performance.now();
      race.held = null;
    });
  });
  window.addEventListener("blur", function () {
    clearTimeout(press.timer);
    press.dir = null;
    race.held = null;
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("#steer button[name=dir]");
    if (!button) return;
    event.preventDefault();
    if (event.detail > 0 && performance.now() - press.releasedAt < CLICK_AFTER_MS) {
      press.releasedAt = -Infinity;
      return;
    }
    want(button.value, false);
  }, true);

  // A swipe on the maze is one step. Its end is heard on the element it began on: a touch
  // keeps its first target, which a swap (several a second in a live race) may have taken out
  // of the page, where the document no longer hears it.
  document.addEventListener("touchstart", function (event) {
    if (!event.target.closest || !event.target.closest("#maze-board")) return;
    var target = event.target;
    var start = { x: event.touches[0].clientX, y: event.touches[0].clientY };
    function done() {
      target.removeEventListener("touchend", end);
      target.removeEventListener("touchcancel", done);
    }
    function end(e) {
      done();
      var t = e.changedTouches[0];
      var dx = t.clientX - start.x, dy = t.clientY - start.y;
      if (Math.max(Math.abs(dx), Math.abs(dy)) < 24) return;
      var dir = Math.abs(dx) > Math.abs(dy) ? (dx > 0 ? "E" : "W") : (dy > 0 ? "S" : "N");
      want(dir, false);
    }
    target.addEventListener("touchend", end);
    target.addEventListener("touchcancel", done);
  }, { passive: true });
})();

// The warehouse editor: the arrow keys move between its cells, and the grid is one stop of the
// Tab key (the cell last visited), as a grid of buttons should be.
(function () {
  var ROWS = "ABCDEFGHIJ";
  var MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  var current = "toggle-A1";
  function buttons() { return document.querySelectorAll("table.warehouse.editor button[name=toggle]"); }
  function rove() {
    var all = buttons();
    if (!all.length) return;
    if (!document.getElementById(current)) current = all[0].id;
    all.forEach(function (b) { b.tabIndex = b.id === current ? 0 : -1; });
  }
  document.addEventListener("focusin", function (event) {
    var button = event.target.closest && event.target.closest("table.warehouse.editor button[name=toggle]");
    if (!button) return;
    current = button.id;
    rove();
  });
  document.addEventListener("keydown", function (event) {
    var button = event.target.closest && event.target.closest("table.warehouse.editor button[name=toggle]");
    var move = MOVES[event.key];
    if (!button || !move || event.altKey || event.ctrlKey || event.metaKey) return;
    var row = ROWS.indexOf(button.value[0]) + move[0];
    var col = parseInt(button.value.slice(1), 10) + move[1];
    var next = row >= 0 && row < ROWS.length && document.getElementById("toggle-" + ROWS[row] + col);
    event.preventDefault();
    if (next) next.focus();
  });
  document.addEventListener("DOMContentLoaded", rove);
  document.addEventListener("htmx:afterSettle", rove);
})();

// The warehouse editor's buttons wait in line. A tap posts the form's warehouse with its cell,
// and the answer draws the whole game again: a tap sent while another was on its way started
// from the same old warehouse, and the later answer dropped the earlier tap (and a warehouse set
// up, drawn or cleared meanwhile went from the old one too). So a button pressed while one is on
// its way is kept, a tap shown at once, and once that answer is drawn the line goes on: the taps
// kept together in one post (the new form's warehouse and each cell as a `toggle`, in order),
// or the next button.
(function () {
  var EDITOR = "table.warehouse.editor button[name=toggle], .warehouse-editor .actions button";
  var sending = null;  // the editor's request on its way
  var line = [];  // the ids of the buttons pressed meanwhile, in order
  function shown(value) {
    var button = document.getElementById("toggle-" + value);
    if (!button) return;
    var crate = button.getAttribute("aria-pressed") !== "true";
    button.closest("td").classList.toggle("crate", crate);
    button.setAttribute("aria-pressed", crate ? "true" : "false");
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest(EDITOR);
    if (!button || !sending) return;
    event.preventDefault();
    event.stopPropagation();
    line.push(button.id);
    if (button.name === "toggle") shown(button.value);
  }, true);
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (elt && elt.matches && elt.matches(EDITOR)) sending = event.detail.xhr;
  });
  // Heard once a request is over, whether its answer was drawn or refused (htmx tells the
  // nearest element still in the page when the answer took the button away). The new buttons
  // are made htmx's at once, not when the answer settles: a tap on one before that would post
  // the whole page.
  document.addEventListener("htmx:afterRequest", function (event) {
    if (!sending || event.detail.xhr !== sending) return;
    sending = null;
    var game = document.getElementById("game");
    if (game && window.htmx) window.htmx.process(game);
    var next = line.length && document.getElementById(line[0]);
    if (!next) {  // nothing kept, or no editor any more (the set-up is done)
      line = [];
      return;
    }
    if (next.name !== "toggle") {
      line.shift();
      next.click();  // a disabled button (an illegal warehouse's Set up) does nothing
      return;
    }
    var taps = 0;
    while (taps < line.length && line[taps].indexOf("toggle-") === 0) taps += 1;
    var cells = line.splice(0, taps).map(function (id) { return id.slice("toggle-".length); });
    var last = document.getElementById("toggle-" + cells[cells.length - 1]);
    cells.slice(0, -1).forEach(function (value) {
      var input = document.createElement("input");
      input.type = "hidden";
      input.name = "toggle";
      input.value = value;
      last.form.appendChild(input);
    });
    cells.forEach(shown);
    last.click();
  });
})();

// A keyboard user whose button went with the swap (a move played, a warehouse set up: the form
// is gone until the next turn) goes on from the game's status line, not from the page's top.
// Only for that request's own swap, and not for a mouse or a thumb (whose focus is not shown),
// nor for the race's steering pad, whose keys work wherever the focus is.
(function () {
  var sent = null;
  // Safari before 15.4 knows no :focus-visible, and throws on it: take the focus as shown.
  function focusShown(el) {
    try {
      return el.matches(":focus-visible");
    } catch (e) {
      return true;
    }
  }
  document.addEventListener("htmx:beforeRequest", function (event) {
    var game = document.getElementById("game");
    var active = document.activeElement;
    if (event.detail.requestConfig.verb !== "post" || !game || !active) return;
    if (event.detail.elt && event.detail.elt.closest && event.detail.elt.closest("#steer")) return;
    if (active === document.body || !game.contains(active) || active.closest("#steer")) return;
    if (focusShown(active)) sent = event.detail.xhr;
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    if (!sent || event.detail.xhr !== sent) return;
    sent = null;
    var active = document.activeElement;
    if (active && active !== document.body) return;
    var status = document.getElementById("status");
    if (status) status.focus();
  });
})();

// Live races by Server-Sent Events (mazesite/events.py). While the game's stream (its
// data-events) is open, its poll is held back: a spectator is sent the spectator's board, a
// runner is told the race moved and fetches its own board. When the stream fails (no events
// server, too many viewers, a lost connection) the poll goes on as without JavaScript, until
// the stream is open again. The browser reconnects by itself and says the last version it had.
(function () {
  var sse = { source: null, url: "", open: false, fetching: false, again: false };

  function game() { return document.getElementById("game"); }
  function version(el) { return parseInt((el && el.dataset.version) || "-1", 10); }

  function close() {
    if (sse.source) sse.source.close();
    sse.source = null;
    sse.url = "";
    sse.open = false;
  }

  function fetchOwn() {
    var el = game();
    if (!el || !el.getAttribute("hx-get")) return;
    if (sse.fetching) { sse.again = true; return; }
    sse.fetching = true;
    var url = el.getAttribute("hx-get").replace(/since=\d+/, "since=" + version(el)) + "&via=sse";
    var done = function () {
      sse.fetching = false;
      if (sse.again) { sse.again = false; fetchOwn(); }
    };
    htmx.ajax("GET", url, { source: el, target: "#game", swap: "outerHTML" }).then(done, done);
  }

  function board(data) {
    var el = game();
    if (!el || data.v <= version(el)) return;
    htmx.swap(el, data.html, { swapStyle: "outerHTML" });
    connect();
  }

  function connect() {
    var el = game();
    var url = el && el.dataset.events;
    if (!url || typeof window.EventSource !== "function") { close(); return; }
    if (url === sse.url) return;
    close();
    sse.url = url;
    var source = new EventSource(url + "&v=" + version(el));
    sse.source = source;
    source.onopen = function () { sse.open = true; };
    source.onerror = function () {
      sse.open = false;
      if (source.readyState === EventSource.CLOSED && sse.source === source) {
        // Refused (no events server here, or too many viewers): the poll goes on.
        sse.source = null;
      }
    };
    source.addEventListener("version", function (event) {
      var data = JSON.parse(event.data);
      if (data.v > version(game())) fetchOwn();
    });
    source.addEventListener("board", function (event) { board(JSON.parse(event.data)); });
    source.addEventListener("end", function () {
      if (sse.source === source) close();
      sse.url = url; // the race is over: no reconnecting to this stream
    });
  }

  // The poll is held back while the stream is open; the fetches the stream asks for are not.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    var path = (event.detail.requestConfig && event.detail.requestConfig.path) || "";
    if (sse.open && elt && elt.id === "game" && path.indexOf("since=") !== -1 &&
        path.indexOf("via=sse") === -1) {
      event.preventDefault();
    }
  });
  document.addEventListener("DOMContentLoaded", connect);
  document.addEventListener("htmx:afterSettle", connect);
})();

// "Your move: N" in the header, the tab's title and the icon's badge, kept true on a game's
// page: the count it was drawn with includes this game, whose turn its own polls and moves
// learn (#game's data-your-turn), so the count follows this game's changes; the lobby's poll
// swaps in the whole count instead (templates/games/_your_games_poll.html).
(function () {
  var yours = null; // whether #game showed the viewer's turn when the count was last set

  function show(slot, n) {
    slot.dataset.count = String(n);
    slot.textContent = "";
    if (n) {
      var link = document.createElement("a");
      link.className = "your-move";
      link.id = "your-move";
      link.href = slot.dataset.href;
      link.textContent = "Your move: " + n;
      slot.appendChild(link);
    }
    document.title = (n ? "(" + n + ") " : "") + document.title.replace(/^\(\d+\) /, "");
    var icon = document.getElementById("favicon");
    if (icon && icon.dataset.badge) icon.href = n ? icon.dataset.badge : icon.dataset.plain;
  }

  function learn() {
    var game = document.getElementById("game");
    if (!game) return;
    var now = game.hasAttribute("data-your-turn");
    var was = yours;
    yours = now;
    var slot = document.getElementById("your-move-slot");
    if (was === null || was === now || !slot) return;
    show(slot, Math.max(0, (parseInt(slot.dataset.count, 10) || 0) + (now ? 1 : -1)));
  }
  document.addEventListener("DOMContentLoaded", learn);
  document.addEventListener("htmx:afterSettle", learn);
})();
