// The playground call's page follows its call: it asks the server for new
// steps (the server waits for a change before answering), adds them to the
// list, and reloads the page once the call is done to show the answer, the
// bill and the timeline. Without this script the page offers a refresh link.
(function () {
  "use strict";
  const box = document.getElementById("progress");
  if (!box) return;
  const list = document.getElementById("steps");
  let seen = Number(box.dataset.steps) || 0;
  async function poll() {
    for (;;) {
      let body;
      try {
        const res = await fetch(box.dataset.status + "?after=" + seen, {credentials: "same-origin", headers: {Accept: "application/json"}});
        if (!res.ok) throw new Error(String(res.status));
        body = await res.json();
      } catch (e) {
        await new Promise((r) => setTimeout(r, 5000));
        continue;
      }
      const steps = body.steps || [];
      if (seen === 0 && steps.length > 0) list.textContent = "";
      for (let i = seen; i < steps.length; i++) {
        const li = document.createElement("li");
        li.textContent = steps[i];
        list.appendChild(li);
      }
      seen = Math.max(seen, steps.length);
      if (body.done) {
        window.location.reload();
        return;
      }
    }
  }
  poll();
})();
