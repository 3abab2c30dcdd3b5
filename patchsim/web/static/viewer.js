/* The game viewer: every position of a game as the engine replayed it, stepped with buttons,
 * the arrow keys or the slider; the move list in record notation; the evaluation curve; the
 * judge's analysis of each move (analysis.js). */
(function () {
  "use strict";
  var h = PS.h;
  var params = PS.params();
  var view = null, ply = 0, evaluation = null, upload = null;
  var board = document.getElementById("board");
  var analysis = new PatchsimAnalysis.Analysis(document.getElementById("analysis"), function () {
    analysis.markMoves(document.getElementById("moves"));
    analysis.show(ply);
    drawCurve();
  });

  function notice(text, info) {
    document.getElementById("notice").appendChild(h("div", { "class": info ? "notice info" :
      "notice" }, text));
  }

  function go(n) {
    if (!view) { return; }
    var last = view.positions.length - 1;
    ply = Math.max(0, Math.min(last, n));
    var pos = view.positions[ply];
    PatchsimBoard.draw(board, view.rules, pos, { names: view.players, highlightLast: true });
    document.getElementById("slider").value = ply;
    var label = ply === 0 ? "start" : "move " + ply + " of " + last + ": " +
      pos.last_move.text + " (seat " + pos.last_move.seat + ")";
    if (pos.finished) {
      label += " \u2014 game over, seat " + pos.winner + " wins " +
        pos.players[0].score + " : " + pos.players[1].score;
    }
    document.getElementById("plylabel").textContent = label;
    document.getElementById("postext").textContent = pos.text;
    ["first", "prev"].forEach(function (id) { document.getElementById(id).disabled = ply === 0; });
    ["next", "last"].forEach(function (id) { document.getElementById(id).disabled = ply === last; });
    var items = document.querySelectorAll("#moves li");
    Array.prototype.forEach.call(items, function (li) {
      var current = parseInt(li.dataset.ply, 10) === ply;
      li.classList.toggle("current", current);
      if (current && li.scrollIntoView) { li.scrollIntoView({ block: "nearest" }); }
    });
    drawCurve();
    analysis.show(ply);
    if (params.get("ply") !== String(ply)) {
      params.set("ply", ply);
      history.replaceState(null, "", "/game?" + params.toString());
    }
  }

  function show(v) {
    view = v;
    document.title = "patchsim: " + v.title;
    document.getElementById("title").textContent = v.title;
    var about = PS.clear(document.getElementById("about"));
    about.appendChild(h("span", null, "ruleset " + v.rules.name + " (" + v.rules.hash + ") \u00b7 " +
      v.moves.length + " moves \u00b7 seat 0: " + v.players[0] + " \u00b7 seat 1: " + v.players[1]));
    if (v.run) {
      about.appendChild(document.createTextNode(" \u00b7 "));
      about.appendChild(h("a", { href: "/run?id=" + encodeURIComponent(v.run) }, "back to the run"));
    }
    if (v.saved_path) { about.appendChild(h("div", null, "saved as " + v.saved_path)); }
    (v.warnings || []).forEach(function (w) { notice(w); });
    document.getElementById("open").hidden = true;
    document.getElementById("game").hidden = false;
    var slider = document.getElementById("slider");
    slider.max = v.positions.length - 1;
    var list = PS.clear(document.getElementById("moves"));
    list.appendChild(h("li", { "data-ply": 0, onclick: function () { go(0); } },
      h("span", { "class": "n" }, ""), "start"));
    v.moves.forEach(function (text, i) {
      var seat = v.positions[i + 1].last_move.seat;
      list.appendChild(h("li", { "data-ply": i + 1, "class": "s" + seat, title: "seat " + seat,
        onclick: function () { go(i + 1); } }, h("span", { "class": "n" }, (i + 1) + "."), text));
    });
    var start = parseInt(params.get("ply") || "0", 10);
    go(isNaN(start) ? 0 : start);
    loadEval();
    analysis.load(v, upload ? upload.name : null);
  }

  function loadEval() {
    var info = document.getElementById("evalinfo");
    var req = view.eval_url ? PS.api(view.eval_url) :
      PS.api("/api/eval", { name: upload ? upload.name : "record", record: view.record });
    req.then(function (e) {
      evaluation = e;
      info.textContent = e.method + (e.note ? " (" + e.note + ")" : "") +
        "; \u25c6 marks a change of favourite.";
      drawCurve();
    }).catch(function (e) { info.textContent = "not available: " + e.message; });
  }

  function drawCurve() {
    var box = document.getElementById("curve");
    if (!evaluation || !view) { return; }
    var pts = evaluation.points, n = view.positions.length - 1;
    var W = 720, H = 170, left = 44, right = 12, top = 12, bottom = 24;
    var NS = "http://www.w3.org/2000/svg"; // the SVG namespace name (not a download)
    function el(tag, attrs, parent) {
      var node = document.createElementNS(NS, tag);
      Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
      if (parent) { parent.appendChild(node); }
      return node;
    }
    function X(i) { return left + (n ? i / n : 0) * (W - left - right); }
    function Y(p) { return top + (1 - p) * (H - top - bottom); }
    PS.clear(box);
    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, id: "eval-curve",
      "data-points": pts.length }, box);
    el("rect", { x: left, y: top, width: W - left - right, height: H - top - bottom,
      fill: "#fbfbf8", stroke: "#d8dde2" }, svg);
    [0, 0.25, 0.5, 0.75, 1].forEach(function (p) {
      el("line", { x1: left, x2: W - right, y1: Y(p), y2: Y(p), stroke: p === 0.5 ? "#888" :
        "#e4e6e8", "stroke-dasharray": p === 0.5 ? "4 3" : "none" }, svg);
      var t = el("text", { x: left - 4, y: Y(p) + 4, "text-anchor": "end", "font-size": 10,
        fill: "#5d6873" }, svg);
      t.textContent = Math.round(p * 100) + "%";
    });
    for (var m = 0; m <= n; m += 10) {
      var tx = el("text", { x: X(m), y: H - 8, "text-anchor": "middle", "font-size": 10,
        fill: "#5d6873" }, svg);
      tx.textContent = String(m);
    }
    // an interval only where there is one (rollouts); the learned estimate has none
    var banded = pts.filter(function (p) { return p.win0_lo !== null && p.win0_hi !== null; });
    if (banded.length) {
      var band = banded.map(function (p) { return X(p.ply) + "," + Y(p.win0_hi); })
        .concat(banded.slice().reverse().map(function (p) { return X(p.ply) + "," + Y(p.win0_lo); }));
      el("polygon", { points: band.join(" "), fill: "rgba(31,119,180,0.16)", stroke: "none",
        "class": "eval-band" }, svg);
    }
    el("polyline", { points: pts.map(function (p) { return X(p.ply) + "," + Y(p.win0); }).join(" "),
      fill: "none", stroke: "#1f77b4", "stroke-width": 2, "class": "eval-line" }, svg);
    pts.forEach(function (p) {
      if (!p.lead_change) { return; }
      var d = el("path", { d: "M" + X(p.ply) + " " + (Y(p.win0) - 6) + "l6 6l-6 6l-6 -6z",
        fill: "#d62728", stroke: "#fff", "class": "lead-change", "data-ply": p.ply }, svg);
      el("title", {}, d).textContent = "move " + p.ply + ": seat " + p.favourite +
        " becomes the favourite (" + Math.round(p.win0 * 100) + "% for seat 0)";
    });
    analysis.drawOnCurve(svg, X, H - bottom, 0.5 * (H - top - bottom));
    el("line", { x1: X(ply), x2: X(ply), y1: top, y2: H - bottom, stroke: "#d4a000",
      "stroke-width": 2, "class": "eval-cursor" }, svg);
    var lab1 = el("text", { x: left + 4, y: top + 11, "font-size": 10, fill: "#1f77b4" }, svg);
    lab1.textContent = "seat 0 wins";
    var lab2 = el("text", { x: left + 4, y: H - bottom - 4, "font-size": 10, fill: "#d62728" }, svg);
    lab2.textContent = "seat 1 wins";
    var here = pts[ply];
    if (here) {
      box.appendChild(h("div", { id: "eval-here", "class": "small" }, "move " + ply +
        ": seat 0 wins " + Math.round(here.win0 * 100) + "%" + (here.win0_lo === null ? "" :
        " [" + Math.round(here.win0_lo * 100) + ", " + Math.round(here.win0_hi * 100) +
        "] (95%)") + ", expected final margin " +
        (here.margin >= 0 ? "+" : "") + here.margin.toFixed(1) + " for seat 0"));
    }
    svg.addEventListener("click", function (e) {
      var r = svg.getBoundingClientRect();
      var x = (e.clientX - r.left) / r.width * W;
      go(Math.round((x - left) / (W - left - right) * n));
    });
  }

  function step(d) { go(ply + d); }

  document.getElementById("first").addEventListener("click", function () { go(0); });
  document.getElementById("prev").addEventListener("click", function () { step(-1); });
  document.getElementById("next").addEventListener("click", function () { step(1); });
  document.getElementById("last").addEventListener("click", function () { go(1e9); });
  document.getElementById("slider").addEventListener("input", function (e) {
    go(parseInt(e.target.value, 10));
  });
  document.addEventListener("keydown", function (e) {
    var tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || !view) { return; }
    var keys = { ArrowLeft: -1, ArrowRight: 1 };
    if (keys[e.key]) { step(keys[e.key]); e.preventDefault(); } else if (e.key === "Home") {
      go(0); e.preventDefault();
    } else if (e.key === "End") { go(1e9); e.preventDefault(); }
  });
  document.getElementById("download").addEventListener("click", function () {
    var blob = new Blob([JSON.stringify(view.record, null, 1) + "\n"],
      { type: "application/json" });
    var a = h("a", { href: URL.createObjectURL(blob), download: "patchsim-record.json" });
    document.body.appendChild(a);
    a.click();
    a.remove();
  });
  document.getElementById("file").addEventListener("change", function (e) {
    var file = e.target.files[0];
    if (!file) { return; }
    document.getElementById("notice").textContent = "";
    file.text().then(function (text) {
      var data;
      try { data = JSON.parse(text); } catch (err) {
        notice(file.name + ": not a JSON file (" + err.message + ")");
        return null;
      }
      upload = { name: file.name };
      return PS.api("/api/record", { name: file.name, record: data }).then(show);
    }).catch(function (err) { notice(err.message); });
  });

  var run = params.get("run"), url = null;
  if (run && params.get("game") !== null) {
    url = "/api/runs/" + encodeURIComponent(run) + "/games/" + encodeURIComponent(params.get("game"));
  } else if (run && params.get("file") !== null) {
    url = "/api/runs/" + encodeURIComponent(run) + "/record?path=" +
      encodeURIComponent(params.get("file"));
  } else if (params.get("saved") !== null) {
    url = "/api/saved/" + encodeURIComponent(params.get("saved"));
  }
  if (url) {
    PS.api(url).then(show).catch(function (e) {
      notice(e.message);
      document.getElementById("open").hidden = false;
    });
  } else {
    document.getElementById("open").hidden = false;
  }
}());
