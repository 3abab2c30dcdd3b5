/* patchsim serve: what every page shares (requests, small DOM helpers). */
(function (root) {
  "use strict";

  /* A JSON request to this server; rejects with the server's message on an error. */
  function api(url, body) {
    var init = { headers: { "Accept": "application/json" } };
    if (body !== undefined) {
      init.method = "POST";
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(url, init).then(function (resp) {
      return resp.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (!resp.ok) {
          var err = new Error((data && data.error) || ("the server answered " + resp.status));
          err.status = resp.status;
          err.data = data;
          throw err;
        }
        return data;
      });
    });
  }

  /* An HTML element: h("a", {href: "/"}, "text", child, ...). */
  function h(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) { return; }
      if (k === "class") { node.className = v; } else if (k.slice(0, 2) === "on") {
        node.addEventListener(k.slice(2), v);
      } else { node.setAttribute(k, v === true ? "" : v); }
    });
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) { continue; }
      if (Array.isArray(c)) {
        c.forEach(function (x) { if (x !== null && x !== undefined) { node.appendChild(toNode(x)); } });
      } else { node.appendChild(toNode(c)); }
    }
    return node;
  }

  function toNode(x) {
    return typeof x === "object" ? x : document.createTextNode(String(x));
  }

  function say(node, text, kind) {
    node.textContent = text || "";
    node.className = "message" + (kind ? " " + kind : "");
  }

  function clear(node) {
    while (node.firstChild) { node.removeChild(node.firstChild); }
    return node;
  }

  root.PS = { api: api, h: h, say: say, clear: clear,
    params: function () { return new URLSearchParams(window.location.search); } };
}(window));
