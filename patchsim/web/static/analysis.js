/* The judge's view of a game's moves (patchsim.play.analyse), beside the game viewer: the
 * candidates of the position on the board with their values, the move played highlighted,
 * the judge's choice starred, the win probability each move lost as a bar on the evaluation
 * curve, and the marks in the move list. Also the hint list of the play page. */
(function (root) {
  "use strict";
  var h = PS.h;

  function pct(v) { return (100 * v).toFixed(1) + "%"; }

  /* The analysis URL of a game whose evaluation URL is ``evalUrl`` (the same game, the
   * last path segment "eval" replaced), or null for an uploaded record (POSTed). */
  function urlOf(evalUrl) {
    return evalUrl ? evalUrl.replace(/\/eval(\?|$)/, "/analysis$1") : null;
  }

  /* The candidates of one analysed position, as a list (the judge's choice starred, the
   * move played highlighted). */
  function candidateList(pos) {
    var list = h("ol", { "class": "candidates", id: "candidates", "data-ply": pos.ply });
    pos.candidates.forEach(function (c) {
      var cls = (c.played ? "played" : "") + (c.best ? " best" : "");
      list.appendChild(h("li", { "class": cls.trim(), "data-move": c.move,
        title: (c.best ? "the judge's choice" : "") + (c.played && c.best ? "; " : "") +
          (c.played ? "the move played" : "") },
        h("span", { "class": "v" }, pct(c.value)), " ", c.best ? "\u2605 " : "", c.move));
    });
    return list;
  }

  function Analysis(box, onLoad) {
    this.box = box;
    this.data = null;
    this.onLoad = onLoad;
  }

  Analysis.prototype.load = function (view, uploadName) {
    var self = this, url = urlOf(view.eval_url);
    var info = this.box.querySelector("#analysisinfo");
    var req = url ? PS.api(url) : PS.api("/api/analysis", { name: uploadName || "record",
      record: view.record });
    req.then(function (a) {
      self.data = a;
      info.textContent = "judge " + a.judge + ": " + a.method + ". Marks: ? lost " +
        Math.round(100 * a.thresholds.mistake) + " points of win probability or more, ?? " +
        Math.round(100 * a.thresholds.blunder) + " or more.";
      self.box.dataset.ready = "1";
      self.summary();
      if (self.onLoad) { self.onLoad(); }
    }).catch(function (e) {
      info.textContent = "not available: " + e.message;
      self.box.dataset.ready = "error";
    });
  };

  Analysis.prototype.summary = function () {
    var box = PS.clear(this.box.querySelector("#analysis-summary"));
    this.data.summary.forEach(function (s) {
      var worst = s.largest.map(function (m) {
        return "move " + m.number + " (\u2212" + pct(m.loss) + ")";
      }).join(", ") || "none marked";
      box.appendChild(h("div", { "class": "small s" + s.seat, "data-seat": s.seat },
        "seat " + s.seat + ": mean loss " + pct(s.mean_loss) + " a move, " + s.mistakes +
        " mistake(s), " + s.blunders + " blunder(s); largest: " + worst));
    });
  };

  /* Show the candidates of the position after ``ply`` moves (its next move's analysis). */
  Analysis.prototype.show = function (ply) {
    var here = PS.clear(this.box.querySelector("#analysis-here"));
    if (!this.data) { return; }
    var pos = this.data.moves[ply];
    if (!pos) {
      here.appendChild(h("p", { "class": "small muted" }, "the game is over: no move to weigh"));
      return;
    }
    here.appendChild(h("p", { "class": "small" }, "move " + pos.number + ", seat " + pos.seat +
      " to move: played " + pos.played + " (" + pct(pos.played_value) + ")" +
      (pos.played === pos.best ? ", the judge's choice" : "; the judge plays " + pos.best +
        " (" + pct(pos.best_value) + ")") + ". Lost " + pct(pos.loss) +
      (pos.mark ? " " + pos.mark : "") + "."));
    here.appendChild(candidateList(pos));
  };

  /* The lost win probability of every move as a bar on the curve (``X``: the curve's x of a
   * position, ``base``: the plot's bottom, ``scale``: pixels for a loss of 1). */
  Analysis.prototype.drawOnCurve = function (svg, X, base, scale) {
    if (!this.data) { return; }
    var NS = "http://www.w3.org/2000/svg";
    this.data.moves.forEach(function (m) {
      if (!(m.loss > 0)) { return; }
      var hgt = Math.max(1.5, m.loss * scale);
      var bar = document.createElementNS(NS, "rect");
      var attrs = { x: X(m.ply + 1) - 2, y: base - hgt, width: 4, height: hgt,
        fill: m.mark === "??" ? "#d62728" : m.mark === "?" ? "#ff7f0e" : "#9aa5ae",
        "class": "loss-bar" + (m.mark ? " marked" : ""), "data-ply": m.ply + 1,
        "data-loss": m.loss };
      Object.keys(attrs).forEach(function (k) { bar.setAttribute(k, attrs[k]); });
      var title = document.createElementNS(NS, "title");
      title.textContent = "move " + m.number + " (seat " + m.seat + "): " + m.played +
        " lost " + pct(m.loss) + (m.mark ? " " + m.mark : "") + "; the judge plays " + m.best;
      bar.appendChild(title);
      svg.appendChild(bar);
    });
  };

  /* The marks in the move list (items with data-ply = the position after the move). */
  Analysis.prototype.markMoves = function (list) {
    if (!this.data) { return; }
    this.data.moves.forEach(function (m) {
      var li = list.querySelector("li[data-ply='" + (m.ply + 1) + "']");
      if (li && m.mark && !li.querySelector(".mark")) {
        // after the move number, where a long move's text cannot cut it off
        li.insertBefore(h("span", { "class": "mark", title: "lost " + pct(m.loss) }, m.mark + " "),
          li.children[0] ? li.children[0].nextSibling : li.firstChild);
      }
    });
  };

  root.PatchsimAnalysis = { Analysis: Analysis, candidateList: candidateList, urlOf: urlOf,
    pct: pct };
}(window));
