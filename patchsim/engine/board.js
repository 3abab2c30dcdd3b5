/* patchsim board: draws one position as SVG, exactly as the engine reported it.
 *
 * A position comes from the server (or is embedded in a report): the quilts square by square
 * (-1 empty, -2 leather, -3 covered by an unknown piece, k >= 0 the k-th patch the player
 * bought), the players' numbers from Game.summary(), the track marks still on the track, the
 * offer and the rest of the circle. Nothing here applies a rule of the game: it only draws.
 * The helpers for orienting a patch (rotate, flip) are geometry for the play page's preview;
 * whether a placement is legal is the engine's answer, sent by the server.
 *
 * Used by the web pages and inlined into the report's self-contained replay, so it defines a
 * single global, PatchsimBoard, and nothing else.
 */
(function (root) {
  "use strict";
  if (root.PatchsimBoard) { return; }

  var NS = "http://www.w3.org/2000/svg"; // the SVG namespace name (not a download)
  var SEAT = ["#1f77b4", "#d62728"];
  var LEATHER = "#7a4a21";
  var EMPTY_FILL = "#fbfaf6";
  var UNKNOWN_FILL = "#9e9e9e";
  var EDGE = "#27323a";
  var COLS = "abcdefghijklmnopqrstuvwxyz";

  function el(tag, attrs, parent) {
    var node = document.createElementNS(NS, tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (attrs[k] !== null && attrs[k] !== undefined) { node.setAttribute(k, attrs[k]); }
      });
    }
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function label(parent, x, y, str, attrs) {
    var a = { x: x, y: y, "font-size": 12, fill: "#1d2329",
      "font-family": "system-ui, 'DejaVu Sans', sans-serif" };
    Object.keys(attrs || {}).forEach(function (k) { a[k] = attrs[k]; });
    var t = el("text", a, parent);
    t.textContent = str;
    return t;
  }

  function squareName(sq, cols) {
    return COLS.charAt(sq % cols) + String(Math.floor(sq / cols) + 1);
  }

  function squareIndex(name, rules) {
    var c = COLS.indexOf(name.charAt(0));
    var r = parseInt(name.slice(1), 10) - 1;
    if (c < 0 || c >= rules.cols || !(r >= 0 && r < rules.rows)) { return -1; }
    return r * rules.cols + c;
  }

  /* The squares a move's record text names (buy ... / leather ...), for highlighting. */
  function moveSquares(rules, text) {
    var words = (text || "").split(/\s+/);
    if (words[0] === "buy") { words = words.slice(2); } else if (words[0] === "leather") {
      words = words.slice(1);
    } else { return []; }
    return words.map(function (w) { return squareIndex(w, rules); })
      .filter(function (s) { return s >= 0; });
  }

  /* --- orientation geometry (for the play page's preview) ------------------------------------ */
  function normalise(cells) {
    var minR = Infinity, minC = Infinity;
    cells.forEach(function (rc) { minR = Math.min(minR, rc[0]); minC = Math.min(minC, rc[1]); });
    return cells.map(function (rc) { return [rc[0] - minR, rc[1] - minC]; })
      .sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });
  }

  /* The cells of a shape flipped (mirror left-right) if asked, then turned a quarter
   * clockwise `turns` times, moved to the origin and sorted. */
  function orient(cells, turns, flip) {
    var out = cells.map(function (rc) { return [rc[0], flip ? -rc[1] : rc[1]]; });
    for (var i = 0; i < ((turns % 4) + 4) % 4; i++) {
      out = out.map(function (rc) { return [rc[1], -rc[0]]; });
    }
    return normalise(out);
  }

  /* The quilt squares a shape covers when its centre cell (half its height and width,
   * rounded down) lies on square (r, c); `off` says whether part of it falls off the quilt. */
  function squaresAt(rules, cells, r, c) {
    var h = 0, w = 0;
    cells.forEach(function (rc) { h = Math.max(h, rc[0] + 1); w = Math.max(w, rc[1] + 1); });
    var r0 = r - Math.floor(h / 2), c0 = c - Math.floor(w / 2);
    var squares = [], off = false;
    cells.forEach(function (rc) {
      var rr = r0 + rc[0], cc = c0 + rc[1];
      if (rr < 0 || cc < 0 || rr >= rules.rows || cc >= rules.cols) { off = true; } else {
        squares.push(rr * rules.cols + cc);
      }
    });
    squares.sort(function (a, b) { return a - b; });
    return { squares: squares, off: off };
  }

  /* --- layout ------------------------------------------------------------------------------ */
  function layout(rules) {
    var side = Math.max(rules.rows, rules.cols);
    var cell = Math.max(14, Math.min(28, Math.floor(252 / side)));
    var L = { cell: cell, margin: 22, gutter: 16, gap: 54, panel: 64 };
    L.qw = cell * rules.cols;
    L.qh = cell * rules.rows;
    L.width = 2 * (L.margin + L.gutter + L.qw) + L.gap;
    L.qx = [L.margin + L.gutter, L.margin + L.gutter + L.qw + L.gap + L.gutter];
    L.qy = L.panel + 18;
    L.trackY = L.qy + L.qh + 34;
    L.tc = 18;
    L.perRow = Math.max(10, Math.floor((L.width - 2 * L.margin) / L.tc));
    L.trackRows = Math.ceil((rules.last_space + 1) / L.perRow);
    L.offerY = L.trackY + L.trackRows * (L.tc + 14) + 18;
    return L;
  }

  /* --- drawing ------------------------------------------------------------------------------ */
  function drawPanel(svg, rules, pos, p, L, opts) {
    var x = L.qx[p] - L.gutter, y = 16;
    var v = pos.players[p];
    var name = (opts.names && opts.names[p]) ? opts.names[p] : "";
    var g = el("g", { "class": "pb-panel", "data-seat": p }, svg);
    el("circle", { cx: x + 6, cy: y - 4, r: 6, fill: SEAT[p] }, g);
    // a long bot spec is cut to leave room for the status on the same line (full in a tip)
    var room = Math.max(8, Math.floor((L.qw + L.gutter - 110) / 7.6));
    var shown = "Seat " + p + (name ? ": " + name : "");
    var head = label(g, x + 18, y, shown.length > room ? shown.slice(0, room - 1) + "\u2026" :
      shown, { "font-weight": 700, "font-size": 13 });
    head.setAttribute("class", "pb-name");
    el("title", null, head).textContent = shown;
    var status = "";
    if (pos.finished) {
      status = pos.winner === p ? "wins" : "";
    } else if (pos.to_move === p) {
      status = pos.pending_leather ? "places leather" : "to move";
    }
    if (status) {
      label(g, x + L.gutter + L.qw, y, status, { "text-anchor": "end", "font-weight": 700,
        fill: SEAT[p], "class": "pb-status" });
    }
    label(g, x, y + 19, "space " + v.position + "/" + rules.last_space + " \u00b7 buttons " +
      v.buttons + " \u00b7 income " + v.income, { "class": "pb-line1" });
    var bonus = "";
    if (rules.bonus) {
      bonus = v.bonus ? " \u00b7 bonus " + rules.bonus.square + "\u00d7" + rules.bonus.square +
        " +" + rules.bonus.points : "";
    }
    label(g, x, y + 37, "empty " + v.empty_squares + " \u00b7 score " + v.score + bonus,
      { "class": "pb-line2", "font-weight": v.bonus ? 700 : 400 });
  }

  function drawQuilt(svg, rules, pos, p, L, opts) {
    var cell = L.cell, x0 = L.qx[p], y0 = L.qy;
    var cells = pos.quilts[p], pieces = pos.pieces[p] || [];
    var g = el("g", { "class": "pb-quilt", "data-seat": p }, svg);
    var r, c;
    for (c = 0; c < rules.cols; c++) {
      label(g, x0 + c * cell + cell / 2, y0 - 5, COLS.charAt(c), { "text-anchor": "middle",
        "font-size": 10, fill: "#6b7680" });
    }
    for (r = 0; r < rules.rows; r++) {
      label(g, x0 - 5, y0 + r * cell + cell / 2 + 3, String(r + 1), { "text-anchor": "end",
        "font-size": 10, fill: "#6b7680" });
    }
    for (var s = 0; s < cells.length; s++) {
      r = Math.floor(s / rules.cols); c = s % rules.cols;
      var v = cells[s], fill = EMPTY_FILL, state = "empty", patch = null;
      if (v === -2) { fill = LEATHER; state = "leather"; } else if (v === -3) {
        fill = UNKNOWN_FILL; state = "unknown";
      } else if (v >= 0) {
        patch = pieces[v] || null;
        state = "patch";
        fill = patch && rules.patches[patch] ? rules.patches[patch].colour : UNKNOWN_FILL;
      }
      var rect = el("rect", { x: x0 + c * cell, y: y0 + r * cell, width: cell, height: cell,
        fill: fill, stroke: v === -1 ? "#d3d6d0" : "none", "stroke-width": 1,
        "class": "pb-sq", "data-seat": p, "data-sq": s, "data-name": squareName(s, rules.cols),
        "data-state": state, "data-patch": patch }, g);
      if (patch) {
        var t = el("title", null, rect);
        t.textContent = patch + " (bought " + ordinal(v + 1) + ")";
      }
      if (v === -2) {
        label(g, x0 + c * cell + cell / 2, y0 + r * cell + cell / 2 + 4, "L", {
          "text-anchor": "middle", "font-size": Math.max(9, cell / 2.4), fill: "#f1dcc4",
          "pointer-events": "none" });
      }
    }
    // piece outlines: a line wherever two neighbouring squares belong to different pieces
    var d = [];
    for (s = 0; s < cells.length; s++) {
      if (cells[s] === -1) { continue; }
      r = Math.floor(s / rules.cols); c = s % rules.cols;
      var X = x0 + c * cell, Y = y0 + r * cell;
      var up = r > 0 ? cells[s - rules.cols] : null;
      var down = r < rules.rows - 1 ? cells[s + rules.cols] : null;
      var left = c > 0 ? cells[s - 1] : null;
      var right = c < rules.cols - 1 ? cells[s + 1] : null;
      var me = cells[s] === -2 ? "L" + s : cells[s]; // each leather square is its own piece
      var same = function (o, t) { return o !== null && o !== -1 && (o === -2 ? "L" + t : o) === me; };
      if (!same(up, s - rules.cols)) { d.push("M" + X + " " + Y + "h" + cell); }
      if (!same(down, s + rules.cols)) { d.push("M" + X + " " + (Y + cell) + "h" + cell); }
      if (!same(left, s - 1)) { d.push("M" + X + " " + Y + "v" + cell); }
      if (!same(right, s + 1)) { d.push("M" + (X + cell) + " " + Y + "v" + cell); }
    }
    if (d.length) {
      el("path", { d: d.join(""), stroke: EDGE, "stroke-width": 1.6, fill: "none",
        "stroke-linecap": "square", "pointer-events": "none" }, g);
    }
    el("rect", { x: x0, y: y0, width: L.qw, height: L.qh, fill: "none", stroke: "#55606a",
      "stroke-width": 1.5, "pointer-events": "none" }, g);
    if (opts.highlightLast && pos.last_move && pos.last_move.seat === p) {
      moveSquares(rules, pos.last_move.text).forEach(function (sq) {
        el("rect", { x: x0 + (sq % rules.cols) * cell + 2, y: y0 + Math.floor(sq / rules.cols) *
          cell + 2, width: cell - 4, height: cell - 4, fill: "none", stroke: "#ffd400",
          "stroke-width": 2.5, "pointer-events": "none", "class": "pb-last" }, g);
      });
    }
    el("g", { "class": "pb-overlay", "data-seat": p, "pointer-events": "none" }, svg);
  }

  function ordinal(n) {
    var s = ["th", "st", "nd", "rd"], v = n % 100;
    return n + (s[(v - 20) % 10] || s[v] || s[0]);
  }

  function trackXY(L, space) {
    var row = Math.floor(space / L.perRow), col = space % L.perRow;
    return { x: L.margin + col * L.tc, y: L.trackY + row * (L.tc + 14) };
  }

  function drawTrack(svg, rules, pos, L) {
    var g = el("g", { "class": "pb-track" }, svg);
    label(g, L.margin, L.trackY - 8, "Time track", { "font-size": 11, fill: "#5d6873" });
    var income = {}, leather = {}, onTrack = {}, pending = {};
    rules.income_marks.forEach(function (m) { income[m] = true; });
    rules.leather_marks.forEach(function (m) { leather[m] = true; });
    (pos.leather_on_track || []).forEach(function (m) { onTrack[m] = true; });
    (pos.leather_pending || []).forEach(function (m) { pending[m] = true; });
    for (var s = 0; s <= rules.last_space; s++) {
      var q = trackXY(L, s);
      el("rect", { x: q.x, y: q.y, width: L.tc, height: L.tc, fill: s === rules.last_space ?
        "#e8e2c8" : "#f3f1ea", stroke: "#c9c5b6", "stroke-width": 0.8, "class": "pb-space",
        "data-space": s }, g);
      if (s % 5 === 0 || s === rules.last_space) {
        label(g, q.x + L.tc / 2, q.y + L.tc + 10, String(s), { "text-anchor": "middle",
          "font-size": 8, fill: "#6b7680" });
      }
    }
    // a mark "at N" lies on the boundary between space N-1 and space N (docs/rules.md R6.1)
    rules.income_marks.forEach(function (m) {
      var q = trackXY(L, m);
      var c = el("circle", { cx: q.x, cy: q.y + 4, r: 3.6, fill: "#2f6db5", stroke: "#fff",
        "stroke-width": 0.8, "class": "pb-income", "data-mark": m }, g);
      el("title", null, c).textContent = "income mark at " + m;
    });
    rules.leather_marks.forEach(function (m) {
      var q = trackXY(L, m), state = onTrack[m] ? "on-track" : pending[m] ? "claimed" : "gone";
      var r = el("rect", { x: q.x - 4, y: q.y + L.tc - 9, width: 8, height: 8,
        fill: state === "on-track" ? LEATHER : "none",
        stroke: state === "gone" ? "#c9b8a6" : LEATHER, "stroke-width": 1,
        "stroke-dasharray": state === "gone" ? "2 1.5" : null, "class": "pb-leather",
        "data-mark": m, "data-state": state }, g);
      el("title", null, r).textContent = "leather mark at " + m + ": " + state.replace("-", " ");
    });
    var p0 = pos.players[0].position, p1 = pos.players[1].position;
    // the token on top is drawn last, so that it covers the one below
    var toks = [0, 1].map(function (p) {
      var space = pos.players[p].position, q = trackXY(L, space);
      return { p: p, q: q, space: space };
    });
    toks.sort(function (a, b) { return (a.p === pos.top ? 1 : 0) - (b.p === pos.top ? 1 : 0); });
    toks.forEach(function (t) {
      var shared = p0 === p1, onTop = pos.top === t.p;
      var dx = shared ? (onTop ? 4 : -3) : 0, dy = shared ? (onTop ? -3 : 3) : 0;
      var tok = el("circle", { cx: t.q.x + L.tc / 2 + dx, cy: t.q.y + L.tc / 2 + dy, r: 6.5,
        fill: SEAT[t.p], stroke: shared && onTop ? "#111" : "#fff", "stroke-width": 1.5,
        "class": "pb-token", "data-seat": t.p, "data-space": t.space }, g);
      el("title", null, tok).textContent = "seat " + t.p + " on space " + t.space +
        (shared ? (onTop ? " (on top)" : " (below)") : "");
      label(g, t.q.x + L.tc / 2 + dx, t.q.y + L.tc / 2 + dy + 3.5, String(t.p), {
        "text-anchor": "middle", "font-size": 9, fill: "#fff", "font-weight": 700,
        "pointer-events": "none" });
    });
  }

  function drawShape(g, cells, x, y, size, colour) {
    cells.forEach(function (rc) {
      el("rect", { x: x + rc[1] * size, y: y + rc[0] * size, width: size, height: size,
        fill: colour, stroke: "#27323a", "stroke-width": 0.7 }, g);
    });
  }

  function shapeSize(cells) {
    var h = 0, w = 0;
    cells.forEach(function (rc) { h = Math.max(h, rc[0] + 1); w = Math.max(w, rc[1] + 1); });
    return { h: h, w: w };
  }

  function drawOffer(svg, rules, pos, L, opts) {
    var g = el("g", { "class": "pb-offers" }, svg);
    label(g, L.margin, L.offerY - 6, pos.offer.length ? "On offer" : "Nothing left on offer",
      { "font-size": 11, fill: "#5d6873" });
    var size = 12, x = L.margin, y = L.offerY, tallest = 0;
    pos.offer.forEach(function (pid, i) {
      var info = rules.patches[pid], dims = shapeSize(info.cells);
      var w = Math.max(dims.w * size, 88) + 12;
      var cls = "pb-offer";
      if (opts.buyable && opts.buyable[pid]) { cls += " buyable"; }
      if (opts.blocked && opts.blocked[pid]) { cls += " blocked"; }
      var box = el("g", { "class": cls, "data-patch": pid, "data-index": i }, g);
      var selected = opts.selected === pid;
      var h = dims.h * size + 42;
      el("rect", { x: x, y: y, width: w, height: h, rx: 4, fill: selected ? "#fff6d0" : "#fff",
        stroke: selected ? "#d4a000" : (opts.blocked && opts.blocked[pid]) ? "#d0b3b0" :
          "#b9c2ca", "stroke-width": selected ? 2.5 : 1, "class": "pb-offer-box" }, box);
      drawShape(box, info.cells, x + 6, y + 6, size, info.colour);
      label(box, x + 6, y + dims.h * size + 20, pid, { "font-weight": 700, "font-size": 11 });
      label(box, x + 6, y + dims.h * size + 34, "cost " + info.cost + "  time " + info.time +
        "  +" + info.income, { "font-size": 10, fill: "#3d4852" });
      if (opts.blocked && opts.blocked[pid]) {
        el("title", null, box).textContent = pid + " cannot be bought: " + opts.blocked[pid];
      }
      x += w + 8;
      tallest = Math.max(tallest, h);
    });
    var rest = pos.next || [];
    var ny = y + Math.max(tallest, 30) + 22;
    if (rest.length) {
      label(g, L.margin, ny - 6, "Then, clockwise", { "font-size": 11, fill: "#5d6873" });
    }
    var small = 6, nx = L.margin, rowH = 0, right = L.width - L.margin;
    rest.forEach(function (pid) {
      var info = rules.patches[pid], dims = shapeSize(info.cells);
      var w = Math.max(dims.w * small, 22) + 6;
      if (nx + w > right) { nx = L.margin; ny += rowH + 8; rowH = 0; }
      var box = el("g", { "class": "pb-next", "data-patch": pid, opacity: 0.8 }, g);
      drawShape(box, info.cells, nx, ny, small, info.colour);
      label(box, nx, ny + dims.h * small + 9, pid, { "font-size": 8, fill: "#5d6873" });
      el("title", null, box).textContent = pid + ": cost " + info.cost + ", time " +
        info.time + ", income " + info.income;
      nx += w + 4;
      rowH = Math.max(rowH, dims.h * small + 10);
    });
    return (rest.length ? ny + rowH : y + tallest) + 12;
  }

  /* Draw `pos` into `container` (emptied first). opts: names [seat 0, seat 1], buyable and
   * blocked ({patch id: true / reason}), selected (a patch id), highlightLast (outline the
   * squares of the last move). Returns the svg element. */
  function draw(container, rules, pos, opts) {
    opts = opts || {};
    var L = layout(rules);
    while (container.firstChild) { container.removeChild(container.firstChild); }
    var svg = el("svg", { xmlns: NS, "class": "pb-board", role: "img",
      "aria-label": "position after move " + pos.ply }, container);
    svg.dataset.ply = pos.ply;
    svg.dataset.text = pos.text || "";
    drawPanel(svg, rules, pos, 0, L, opts);
    drawPanel(svg, rules, pos, 1, L, opts);
    drawQuilt(svg, rules, pos, 0, L, opts);
    drawQuilt(svg, rules, pos, 1, L, opts);
    drawTrack(svg, rules, pos, L);
    var bottom = drawOffer(svg, rules, pos, L, opts);
    svg.setAttribute("viewBox", "0 0 " + L.width + " " + bottom);
    svg.setAttribute("width", L.width);
    svg.setAttribute("height", bottom);
    svg._layout = L;
    return svg;
  }

  /* Outline `squares` of seat's quilt on the overlay (ok: green, else red). */
  function mark(container, rules, seat, squares, ok) {
    var svg = container.querySelector("svg.pb-board");
    if (!svg) { return; }
    var L = svg._layout || layout(rules);
    var layer = svg.querySelector('g.pb-overlay[data-seat="' + seat + '"]');
    clearMarks(container);
    squares.forEach(function (sq) {
      el("rect", { x: L.qx[seat] + (sq % rules.cols) * L.cell + 1,
        y: L.qy + Math.floor(sq / rules.cols) * L.cell + 1, width: L.cell - 2,
        height: L.cell - 2, fill: ok ? "rgba(46,125,50,0.35)" : "rgba(179,38,30,0.35)",
        stroke: ok ? "#2e7d32" : "#b3261e", "stroke-width": 2, "class": "pb-mark",
        "data-sq": sq, "data-ok": ok ? 1 : 0 }, layer);
    });
  }

  function clearMarks(container) {
    Array.prototype.forEach.call(container.querySelectorAll(".pb-mark"), function (n) {
      n.parentNode.removeChild(n);
    });
  }

  root.PatchsimBoard = {
    draw: draw, mark: mark, clearMarks: clearMarks, orient: orient, squaresAt: squaresAt,
    moveSquares: moveSquares, squareName: squareName, seatColours: SEAT
  };
}(typeof window !== "undefined" ? window : this));
