// The run page's live progress: while the batch runs, its small progress
// document is polled every few seconds and the status line (an aria-live
// region), the bar and the badge follow it; once the batch is final the
// page is loaded again for its result. Without JavaScript the page has a
// Refresh link instead.
(function () {
  "use strict";
  var live = document.getElementById("run-live");
  if (!live || !live.dataset.progress) {
    return;
  }
  var url = live.dataset.progress;
  var status = document.getElementById("run-status");
  var bar = document.getElementById("run-bar");
  var badge = document.getElementById("run-badge");
  var last = status ? status.textContent : "";
  var every = 3000;

  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (res) {
        if (!res.ok) {
          throw new Error("HTTP " + res.status);
        }
        return res.json();
      })
      .then(function (p) {
        if (p.final) {
          window.location.reload();
          return;
        }
        if (bar) {
          bar.value = p.percent;
        }
        if (badge) {
          badge.textContent = p.words.split(":")[0];
        }
        if (status && p.words !== last) {
          status.textContent = p.words;
          last = p.words;
        }
        window.setTimeout(poll, every);
      })
      .catch(function () {
        window.setTimeout(poll, every * 2);
      });
  }
  window.setTimeout(poll, every);
})();
