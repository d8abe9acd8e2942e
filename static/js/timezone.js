// The browser's time zone (Intl), guessed for the player: it fills the sign-up form's hidden
// field, and on the account page, while the player's zone is still the default (UTC), it
// chooses the browser's zone in the list and says so; the player saves it. Without
// JavaScript, sign-up gives UTC and the list works as it is.
(function () {
  function zone() {
    try {
      return Intl.DateTimeFormat().resolvedOptions().timeZone || "";
    } catch (e) {
      return "";
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    var name = zone();
    if (!name) return;
    document.querySelectorAll('input[data-time-zone="guess"]').forEach(function (input) {
      if (!input.value) input.value = name;
    });
    var note = document.getElementById("time-zone-guess");
    var select = document.querySelector('select[data-time-zone="choose"]');
    if (!note || !select || name === "UTC") return;
    var known = Array.prototype.some.call(select.options, function (o) { return o.value === name; });
    if (!known) return;
    select.value = name;
    note.querySelector(".guess").textContent = name;
    note.hidden = false;
  });
})();
