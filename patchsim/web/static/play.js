/* Playing a bot. The page shows the engine's position and the legal moves the server sent;
 * a click sends a move as record text and the engine plays it or refuses it (its reason is
 * shown). The page's own check of a placement only colours the preview. */
(function () {
  "use strict";
  var h = PS.h;
  var params = PS.params();
  var board = document.getElementById("board");
  var message = document.getElementById("message");
  var game = null;          // the server's view of the game
  var legalKeys = {};       // patch id -> set of placements ("1,2,3": sorted square indices)
  var leatherOk = {};       // square index -> true
  var selected = null, turns = 0, flip = false, hover = null, busy = false;
  var hinting = false;      // a hint is being computed

  function notice(text) {
    PS.clear(document.getElementById("notice")).appendChild(h("div", { "class": "notice" }, text));
  }

  function rules() { return game.rules; }
  function pos() { return game.position; }
  function pendingLeather() { return game.your_turn && pos().pending_leather > 0; }

  function show(v) {
    if (!game || game.id !== v.id || game.moves.length !== v.moves.length) {
      PS.clear(document.getElementById("hint"));  // a hint is for one position
    }
    game = v;
    legalKeys = {};
    leatherOk = {};
    if (v.legal) {
      Object.keys(v.legal.buys).forEach(function (pid) {
        var set = {};
        v.legal.buys[pid].forEach(function (sqs) { set[sqs.join(",")] = true; });
        legalKeys[pid] = set;
      });
      v.legal.leather.forEach(function (s) { leatherOk[s] = true; });
    }
    if (selected && !legalKeys[selected]) { selected = null; }
    document.getElementById("play").hidden = false;
    if (params.get("session") !== v.id) {
      params.set("session", v.id);
      history.replaceState(null, "", "/play?" + params.toString());
    }
    render();
  }

  function render() {
    var v = game, p = pos(), you = v.human;
    var names = [];
    names[you] = "you";
    names[1 - you] = v.bot;
    var buyable = {};
    Object.keys(legalKeys).forEach(function (pid) { buyable[pid] = true; });
    PatchsimBoard.draw(board, v.rules, p, { names: names, buyable: buyable,
      blocked: v.unbuyable || {}, selected: selected, highlightLast: true });
    board.dataset.yourTurn = v.your_turn ? "1" : "0";
    document.getElementById("postext").textContent = p.text;
    var status = document.getElementById("status");
    var text, state;
    if (v.error) {
      text = v.error; state = "error";
    } else if (p.finished) {
      var mine = p.players[you].score, theirs = p.players[1 - you].score;
      text = (p.winner === you ? "You win " : "The bot wins ") + mine + " : " + theirs +
        (mine === theirs ? " (tie-break: first to reach the end)" : "") + ".";
      state = "over";
    } else if (busy) {
      text = "Sending your move; the bot replies..."; state = "busy";
    } else if (!v.your_turn) {
      text = "The bot is thinking..."; state = "bot";
    } else if (p.pending_leather) {
      text = "Place your leather patch: click an empty square of your quilt."; state = "leather";
    } else {
      text = "Your turn: click a patch on offer, then a square of your quilt; or pass.";
      state = "turn";
    }
    status.textContent = text;
    status.dataset.state = state;
    document.getElementById("pass").disabled = !(v.legal && v.legal.pass) || busy;
    ["rotate", "flip", "cancel"].forEach(function (id) {
      document.getElementById(id).disabled = !selected || busy;
    });
    document.getElementById("hint-button").disabled = !v.your_turn || busy || hinting;
    drawMoves();
    drawPreview();
    showResult();
    updateMarks();
  }

  function drawMoves() {
    var list = PS.clear(document.getElementById("moves"));
    game.moves.forEach(function (m) {
      list.appendChild(h("li", { "class": "s" + m.seat, title: m.seat === game.human ? "you" :
        "bot" }, h("span", { "class": "n" }, m.number + "."), m.text));
    });
    if (list.lastChild && list.lastChild.scrollIntoView) {
      list.lastChild.scrollIntoView({ block: "nearest" });
    }
  }

  function cells() {
    return PatchsimBoard.orient(rules().patches[selected].cells, turns, flip);
  }

  function drawPreview() {
    var box = PS.clear(document.getElementById("preview"));
    if (!selected) {
      box.removeAttribute("data-patch");
      box.removeAttribute("data-cells");
      return;
    }
    var info = rules().patches[selected], cs = cells(), size = 12, hgt = 0, wid = 0;
    cs.forEach(function (rc) { hgt = Math.max(hgt, rc[0] + 1); wid = Math.max(wid, rc[1] + 1); });
    var NS = "http://www.w3.org/2000/svg"; // the SVG namespace name (not a download)
    var svg = document.createElementNS(NS, "svg");
    svg.setAttribute("width", wid * size + 2);
    svg.setAttribute("height", hgt * size + 2);
    cs.forEach(function (rc) {
      var r = document.createElementNS(NS, "rect");
      r.setAttribute("x", 1 + rc[1] * size); r.setAttribute("y", 1 + rc[0] * size);
      r.setAttribute("width", size); r.setAttribute("height", size);
      r.setAttribute("fill", info.colour); r.setAttribute("stroke", "#27323a");
      svg.appendChild(r);
    });
    box.appendChild(svg);
    box.appendChild(h("span", null, selected + " (cost " + info.cost + ", time " + info.time +
      ", income " + info.income + "): point at your quilt, click to place"));
    box.dataset.patch = selected;
    box.dataset.cells = cs.map(function (rc) { return rc[0] + "," + rc[1]; }).join(";");
  }

  function showResult() {
    var box = PS.clear(document.getElementById("result"));
    if (game.save_error && game.record) {
      // the folder refused the file: the record is still here, to keep by hand
      var blob = new Blob([JSON.stringify(game.record, null, 1) + "\n"], { type: "application/json" });
      box.appendChild(h("p", { id: "save-error", "class": "error" }, game.save_error + " ",
        h("a", { href: URL.createObjectURL(blob), download: "patchsim-game.json" },
          "download the record")));
      return;
    }
    if (!game.saved) { return; }
    box.appendChild(h("p", { id: "saved", "data-name": game.saved, "data-path": game.saved_path },
      "The game is saved as a record: " + game.saved_path + " (",
      h("a", { href: "/game?saved=" + encodeURIComponent(game.saved) }, "view it"),
      "; on the command line: patchsim replay " + game.saved_path + ")"));
  }

  /* Colour the squares under the pointer: green where the engine's legal moves (sent by the
   * server) have this placement, red elsewhere. */
  function updateMarks() {
    PatchsimBoard.clearMarks(board);
    var box = document.getElementById("preview");
    if (hover === null || !game || !game.your_turn || busy) { return; }
    var R = rules(), you = game.human;
    if (pendingLeather()) {
      PatchsimBoard.mark(board, R, you, [hover], !!leatherOk[hover]);
      return;
    }
    if (!selected) { return; }
    var at = PatchsimBoard.squaresAt(R, cells(), Math.floor(hover / R.cols), hover % R.cols);
    var ok = !at.off && !!legalKeys[selected][at.squares.join(",")];
    PatchsimBoard.mark(board, R, you, at.squares, ok);
    box.dataset.ok = ok ? "1" : "0";
    box.dataset.squares = at.squares.join(",");
    PS.say(message, ok ? "" : at.off ? "Part of " + selected + " would be off the quilt." :
      "Not a legal placement of " + selected + " here.", ok ? "" : "bad");
  }

  function send(move) {
    if (busy) { return; }
    busy = true;
    PS.say(message, "", "");
    render();
    PS.api("/api/play/" + encodeURIComponent(game.id) + "/move", { move: move })
      .then(function (v) {
        busy = false;
        selected = null; turns = 0; flip = false;
        show(v);
      })
      .catch(function (e) {
        busy = false;
        render();
        PS.say(message, e.message, "bad");
        message.dataset.reason = (e.data && e.data.reason) || "";
      });
  }

  function squareFrom(target) {
    var sq = target.closest ? target.closest("rect.pb-sq") : null;
    if (!sq || parseInt(sq.dataset.seat, 10) !== game.human) { return null; }
    return parseInt(sq.dataset.sq, 10);
  }

  board.addEventListener("mousemove", function (e) {
    if (!game) { return; }
    var s = squareFrom(e.target);
    if (s !== hover) { hover = s; updateMarks(); }
  });
  board.addEventListener("mouseleave", function () { hover = null; updateMarks(); });
  board.addEventListener("click", function (e) {
    if (!game || !game.your_turn || busy) { return; }
    var offer = e.target.closest ? e.target.closest("g.pb-offer") : null;
    if (offer) {
      var pid = offer.dataset.patch;
      if (pendingLeather()) {
        PS.say(message, "Place your leather patch first.", "bad");
      } else if (!legalKeys[pid]) {
        PS.say(message, pid + " cannot be bought now: " + ((game.unbuyable || {})[pid] ||
          "no legal placement"), "bad");
      } else {
        selected = selected === pid ? null : pid;
        turns = 0; flip = false;
        PS.say(message, "", "");
        render();
      }
      return;
    }
    var s = squareFrom(e.target);
    if (s === null) { return; }
    var R = rules();
    if (pendingLeather()) {
      send("leather " + PatchsimBoard.squareName(s, R.cols));
      return;
    }
    if (!selected) {
      PS.say(message, "Choose a patch from the offer first (or pass).", "bad");
      return;
    }
    var at = PatchsimBoard.squaresAt(R, cells(), Math.floor(s / R.cols), s % R.cols);
    if (at.off) {
      PS.say(message, "Part of " + selected + " would be off the quilt: not placed.", "bad");
      return;
    }
    // sent even when the page thinks it illegal: the engine decides, and says why
    send("buy " + selected + " " + at.squares.map(function (q) {
      return PatchsimBoard.squareName(q, R.cols);
    }).join(" "));
  });

  function rotate() { if (selected) { turns = (turns + 1) % 4; drawPreview(); updateMarks(); } }
  function doFlip() { if (selected) { flip = !flip; drawPreview(); updateMarks(); } }
  function cancel() { selected = null; render(); PS.say(message, "", ""); }
  document.getElementById("rotate").addEventListener("click", rotate);
  document.getElementById("flip").addEventListener("click", doFlip);
  document.getElementById("cancel").addEventListener("click", cancel);
  document.getElementById("pass").addEventListener("click", function () { send("pass"); });
  /* The judge's candidates for this position, with their values (the server's analysis). */
  document.getElementById("hint-button").addEventListener("click", function () {
    if (!game || !game.your_turn || hinting) { return; }
    var box = PS.clear(document.getElementById("hint"));
    var at = game.moves.length;
    hinting = true;
    render();
    box.appendChild(h("span", { "class": "muted" }, "thinking..."));
    PS.api("/api/play/" + encodeURIComponent(game.id) + "/hint").then(function (pos) {
      hinting = false;
      render();
      if (game.moves.length !== at) { return; }  // the game moved on meanwhile
      PS.clear(box).appendChild(h("div", { id: "hint-best", "data-move": pos.best },
        "The judge (" + pos.judge + ") plays " + pos.best + ": " +
        PatchsimAnalysis.pct(pos.best_value) + " to win for you. Its candidates:"));
      box.appendChild(PatchsimAnalysis.candidateList(pos));
    }).catch(function (e) {
      hinting = false;
      render();
      PS.clear(box).appendChild(h("span", { "class": "message bad" }, "no hint: " + e.message));
    });
  });
  document.addEventListener("keydown", function (e) {
    var tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || !game) { return; }
    if (e.key === "r" || e.key === "R") { rotate(); } else if (e.key === "f" || e.key === "F") {
      doFlip();
    } else if (e.key === "Escape") { cancel(); }
  });

  document.getElementById("setup").addEventListener("submit", function (e) {
    e.preventDefault();
    var f = e.target.elements;
    var body = { ruleset: f.ruleset.value, bot: f.bot.value.trim(),
      seat: parseInt(f.seat.value, 10) };
    if (f.seed.value !== "") { body.seed = parseInt(f.seed.value, 10); }
    document.getElementById("notice").textContent = "";
    selected = null;
    PS.api("/api/play", body).then(show).catch(function (err) { notice(err.message); });
  });

  PS.api("/api/play/options").then(function (opts) {
    var sel = document.getElementById("ruleset");
    opts.rulesets.forEach(function (r) { sel.appendChild(h("option", { value: r.key }, r.label)); });
    if (opts.rulesets.some(function (r) { return r.key === "edition2"; })) { sel.value = "edition2"; }
    var list = document.getElementById("botlist");
    opts.bots.forEach(function (b) { list.appendChild(h("option", { value: b.name }, b.description)); });
    if (params.get("session")) {
      return PS.api("/api/play/" + encodeURIComponent(params.get("session"))).then(show);
    }
    return null;
  }).catch(function (e) { notice(e.message); });
}());
