// The mode builder checks the spec as it is typed: 400 ms after the last
// change it posts the form to the builder's validation (the same as the
// Check button, which works without this script) and puts each refusal
// beside the field it names, the refusals that name none in the summary
// above the form, and the price floor beside the prices.
(function () {
  "use strict";
  const form = document.getElementById("builder");
  if (!form || !form.dataset.validate) return;
  const summary = document.getElementById("builder-summary");
  const floor = document.getElementById("floor");
  let timer = 0;
  let asked = 0;

  function fieldOf(name) {
    return form.querySelector('[data-field="' + name + '"]');
  }

  // show puts the messages by field, clearing the fields that have none.
  function show(body) {
    const byField = {};
    const rest = [];
    for (const r of body.refusals || []) {
      if (r.field && fieldOf(r.field)) {
        (byField[r.field] = byField[r.field] || []).push(r.message);
      } else {
        rest.push(r);
      }
    }
    for (const box of form.querySelectorAll("[data-field]")) {
      const name = box.dataset.field;
      const input = box.querySelector("input, textarea, select");
      const msg = document.getElementById(name + "-error");
      const text = (byField[name] || []).join(" ");
      if (msg && msg.textContent !== text) msg.textContent = text;
      if (msg) msg.hidden = text === "";
      if (input) {
        if (text) input.setAttribute("aria-invalid", "true");
        else input.removeAttribute("aria-invalid");
      }
    }
    summary.textContent = "";
    if (rest.length > 0) {
      const box = document.createElement("div");
      box.className = "error";
      const p = document.createElement("p");
      p.textContent = "The spec as a whole:";
      const ul = document.createElement("ul");
      for (const r of rest) {
        const li = document.createElement("li");
        if (r.path) {
          const code = document.createElement("code");
          code.textContent = r.path;
          li.append(code, ": ");
        }
        li.append(r.message);
        ul.appendChild(li);
      }
      box.append(p, ul);
      summary.appendChild(box);
    } else if ((body.refusals || []).length === 0) {
      const p = document.createElement("p");
      p.className = "notice";
      p.textContent = "The spec passes every rule.";
      summary.appendChild(p);
    } else {
      const p = document.createElement("p");
      p.className = "hint";
      const n = body.refusals.length;
      p.textContent = n === 1 ? "1 rule is broken: see the field marked." : n + " rules are broken: see the fields marked.";
      summary.appendChild(p);
    }
    if (floor) {
      floor.textContent = body.floor
        ? "Price floor " + body.floor + " · recommended " + body.recommended
        : "The price floor shows once the spec reads as a spec.";
    }
  }

  async function check() {
    const mine = ++asked;
    let body;
    try {
      const res = await fetch(form.dataset.validate, {
        method: "POST",
        credentials: "same-origin",
        headers: {Accept: "application/json"},
        body: new URLSearchParams(new FormData(form)),
      });
      if (!res.ok) return;
      body = await res.json();
    } catch (e) {
      return; // the Check button still works
    }
    if (mine === asked) show(body);
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(check, 400);
  }
  form.addEventListener("input", later);
  form.addEventListener("change", later);
})();
