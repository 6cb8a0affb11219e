// Passkeys (WebAuthn) for Conclave's pages. A button with data-passkey
// ("create" or "get"), data-begin and data-finish runs one ceremony: it asks
// the server for the options, lets the browser create or use a passkey,
// and posts the result back. Errors are shown in the element named by
// data-status. A button with data-copy copies a field (a new key, a
// link). No inline script: the page's CSP allows only this file.
"use strict";

(function () {
  function fromB64u(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) s += "=";
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }

  function toB64u(buf) {
    const bytes = new Uint8Array(buf);
    let bin = "";
    for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  // decode turns the server's base64url fields into the buffers the
  // browser's API wants.
  function decode(o) {
    o.challenge = fromB64u(o.challenge);
    if (o.user && typeof o.user.id === "string") o.user.id = fromB64u(o.user.id);
    for (const list of [o.excludeCredentials, o.allowCredentials]) {
      for (const c of list || []) c.id = fromB64u(c.id);
    }
    return o;
  }

  // encode is the JSON form of a PublicKeyCredential the server parses.
  function encode(cred) {
    const r = cred.response;
    const out = {
      id: cred.id, rawId: toB64u(cred.rawId), type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {},
      response: { clientDataJSON: toB64u(r.clientDataJSON) },
    };
    if (r.attestationObject) {
      out.response.attestationObject = toB64u(r.attestationObject);
      if (r.getTransports) out.response.transports = r.getTransports();
    } else {
      out.response.authenticatorData = toB64u(r.authenticatorData);
      out.response.signature = toB64u(r.signature);
      if (r.userHandle) out.response.userHandle = toB64u(r.userHandle);
    }
    return out;
  }

  function show(btn, msg) {
    const el = document.getElementById(btn.dataset.status);
    if (el) { el.textContent = msg; el.hidden = !msg; }
  }

  async function post(url, body, json) {
    const res = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: json ? { "Content-Type": "application/json", Accept: "application/json" } : { Accept: "application/json" },
      body: body,
    });
    let data = {};
    try { data = await res.json(); } catch (e) { data = { error: "The server did not answer as expected (" + res.status + ")." }; }
    if (!res.ok) throw new Error(data.error || ("Request failed (" + res.status + ")."));
    return data;
  }

  async function run(btn) {
    if (!window.PublicKeyCredential) { show(btn, "This browser does not support passkeys."); return; }
    show(btn, "");
    btn.disabled = true;
    const form = btn.closest("form");
    try {
      const fields = form ? new URLSearchParams(new FormData(form)) : new URLSearchParams();
      fields.delete("password");
      const begun = await post(btn.dataset.begin, fields, false);
      const options = decode(begun.options.publicKey);
      const cred = btn.dataset.passkey === "create"
        ? await navigator.credentials.create({ publicKey: options })
        : await navigator.credentials.get({ publicKey: options });
      const done = await post(btn.dataset.finish, JSON.stringify({
        ceremony: begun.ceremony, credential: encode(cred), name: fields.get("name") || "",
      }), true);
      window.location.assign(done.redirect || "/");
    } catch (e) {
      show(btn, e && e.name === "NotAllowedError" ? "The passkey request was cancelled or timed out." : (e.message || String(e)));
    } finally {
      btn.disabled = false;
    }
  }

  // A button with data-copy (hidden without script) copies the value or
  // text of the element whose id it names, and says so on itself.
  function copy(btn) {
    const el = document.getElementById(btn.dataset.copy);
    if (!el || !navigator.clipboard) return;
    navigator.clipboard.writeText(el.value !== undefined ? el.value : el.textContent).then(function () {
      btn.textContent = "Copied";
    }, function () {
      btn.textContent = "Select and copy it";
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    for (const btn of document.querySelectorAll("button[data-passkey]")) {
      btn.addEventListener("click", function () { run(btn); });
    }
    for (const btn of document.querySelectorAll("button[data-copy]")) {
      btn.hidden = false;
      btn.addEventListener("click", function () { copy(btn); });
    }
  });
})();
