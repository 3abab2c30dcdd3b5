/* One run: its games table, filtered on the server, with a link to each game. */
(function () {
  "use strict";
  var h = PS.h;
  var params = PS.params();
  var runId = params.get("id") || "";
  var form = document.getElementById("filters");
  var offset = parseInt(params.get("offset") || "0", 10) || 0;
  var LIMIT = 50;
  var names = ["ruleset", "pairing", "winner", "abs_margin_min", "abs_margin_max", "bonus", "leather",
    "sort"];

  function notice(text) {
    PS.clear(document.getElementById("notice")).appendChild(h("div", { "class": "notice" }, text));
  }

  function fillSelect(sel, values, labelFor) {
    values.forEach(function (v) {
      sel.appendChild(h("option", { value: labelFor ? labelFor.value(v) : v },
        labelFor ? labelFor.text(v) : v));
    });
  }

  function query() {
    var q = new URLSearchParams();
    names.forEach(function (n) {
      var v = form.elements[n].value;
      if (v !== "" && !(n === "sort" && v === "game_id")) { q.set(n, v); }
    });
    return q;
  }

  function load(pushUrl) {
    var q = query();
    var shown = new URLSearchParams(q);
    shown.set("id", runId);
    if (offset) { shown.set("offset", offset); }
    if (pushUrl) { history.replaceState(null, "", "/run?" + shown.toString()); }
    q.set("offset", offset);
    q.set("limit", LIMIT);
    return PS.api("/api/runs/" + encodeURIComponent(runId) + "/games?" + q.toString())
      .then(showGames).catch(function (e) { notice(e.message); });
  }

  function seat(p) { return h("span", { "class": "seat" + p }, "seat " + p); }

  function showGames(data) {
    document.getElementById("notice").textContent = "";
    var end = Math.min(data.offset + data.games.length, data.matching);
    document.getElementById("count").textContent = data.matching ?
      "games " + (data.offset + 1) + "\u2013" + end + " of " + data.matching + " matching (" +
      data.total + " in the run)" : "no game matches (" + data.total + " in the run)";
    if (data.counted_once_note) {
      document.getElementById("count").textContent += "; " + data.counted_once_note;
    }
    document.getElementById("prev").disabled = data.offset <= 0;
    document.getElementById("next").disabled = end >= data.matching;
    var rows = data.games.map(function (g) {
      var link = "/game?run=" + encodeURIComponent(runId) + "&game=" + g.game_id;
      var claims = g.claims0 < 0 ? "?" : g.claims0 + " / " + g.claims1;
      return h("tr", { "data-game": g.game_id, "data-winner": g.winner,
        "data-abs-margin": g.abs_margin, "data-bonus": g.bonus, "data-claims0": g.claims0,
        "data-claims1": g.claims1, "data-ruleset": g.ruleset, "data-pairing": g.pairing,
        "data-counted-once": g.counted_once },
        h("td", { "class": "num" }, h("a", { href: link, "class": "game-link" }, String(g.game_id)),
          g.counted_once ? h("span", { "class": "small counted-once",
            title: "deterministic self-play: the seat-swapped game is the same game; it is " +
              "counted once, as in the report" }, " (counted once)") : null),
        h("td", null, g.ruleset),
        h("td", null, g.bot0),
        h("td", null, g.bot1),
        h("td", { "class": "num" }, g.score0 + " : " + g.score1),
        h("td", null, seat(g.winner), " ", g.winner_bot, g.tie_break ? " (tie-break)" : ""),
        h("td", { "class": "num" }, String(g.abs_margin)),
        h("td", null, g.bonus < 0 ? "\u2013" : seat(g.bonus)),
        h("td", { "class": "num" }, claims),
        h("td", { "class": "num" }, String(g.plies)),
        h("td", null, h("a", { href: link }, "view")));
    });
    var box = PS.clear(document.getElementById("games"));
    box.appendChild(h("table", { "class": "data", id: "games-table" },
      h("thead", null, h("tr", null, ["game", "ruleset", "seat 0", "seat 1", "score",
        "winner", "winner's lead", "bonus", "leather claims 0 / 1", "moves", ""].map(function (t, i) {
        return h("th", { "class": [0, 4, 6, 8, 9].indexOf(i) >= 0 ? "num" : null }, t);
      }))), h("tbody", null, rows)));
  }

  function showRun(run) {
    document.title = "patchsim: " + run.label;
    document.getElementById("title").textContent = run.label;
    var about = PS.clear(document.getElementById("about"));
    about.appendChild(h("span", null, run.path + " \u00b7 " + run.games + " games \u00b7 bots " +
      (run.bots || []).join("; ") + " "));
    (run.reports || []).forEach(function (f) {
      about.appendChild(h("a", { href: "/files/" + run.id + "/" + f, target: "_blank" }, f));
      about.appendChild(document.createTextNode(" "));
    });
    fillSelect(form.elements.ruleset, run.options.rulesets);
    fillSelect(form.elements.pairing, run.options.pairings);
    fillSelect(form.elements.winner, run.options.bots, {
      value: function (b) { return "bot:" + b; }, text: function (b) { return "bot " + b; } });
    if (!run.options.claims_known) {
      form.elements.leather.disabled = true;
      form.elements.leather.title = "the events table cannot be read";
    }
    names.forEach(function (n) { if (params.get(n)) { form.elements[n].value = params.get(n); } });
    if (run.records && run.records.length) {
      var rec = PS.clear(document.getElementById("records"));
      rec.appendChild(h("h2", null, "Record files in this run folder"));
      rec.appendChild(h("ul", null, run.records.map(function (f) {
        return h("li", null, h("a", { href: "/game?run=" + encodeURIComponent(runId) +
          "&file=" + encodeURIComponent(f) }, f));
      })));
    }
    return load(false);
  }

  form.addEventListener("change", function () { offset = 0; load(true); });
  form.addEventListener("submit", function (e) { e.preventDefault(); offset = 0; load(true); });
  document.getElementById("f-reset").addEventListener("click", function () {
    names.forEach(function (n) { form.elements[n].value = n === "sort" ? "game_id" : ""; });
    offset = 0;
    load(true);
  });
  document.getElementById("prev").addEventListener("click", function () {
    offset = Math.max(0, offset - LIMIT); load(true);
  });
  document.getElementById("next").addEventListener("click", function () {
    offset += LIMIT; load(true);
  });

  if (!runId) { notice("No run given: open one from the list of runs."); return; }
  PS.api("/api/runs/" + encodeURIComponent(runId)).then(showRun).catch(function (e) {
    notice(e.message);
  });
}());
