/* The runs page: every run folder the server was given, with its report and status. */
(function () {
  "use strict";
  var h = PS.h;

  function runRow(run) {
    var reports = (run.reports || []).filter(function (f) { return /\.html$/.test(f); });
    // a finished run whose tables were not kept is not broken: its report is still there
    var problem = (run.error || "").replace(run.path + ": ", "");
    var status = run.error ? h("span", { "class": run.complete ? "muted" : "error" }, problem) :
      (run.complete ? "complete" : "incomplete");
    return h("tr", { "data-run": run.id },
      h("td", null, run.error ? run.label : h("a", { href: "/run?id=" + run.id,
        "class": "run-link" }, run.label)),
      h("td", null, (run.rulesets || []).join(", ")),
      h("td", null, (run.bots || []).join("; ")),
      h("td", { "class": "num" }, run.error ? "" : String(run.games)),
      h("td", null, reports.map(function (f) {
        return h("a", { href: "/files/" + run.id + "/" + f, target: "_blank" }, f + " ");
      })),
      h("td", { "class": "small" }, status));
  }

  function show(data) {
    document.getElementById("roots").textContent =
      "Run folders in or below: " + (data.roots.join(", ") || "(none)");
    var problems = PS.clear(document.getElementById("problems"));
    (data.problems || []).forEach(function (p) {
      problems.appendChild(h("div", { "class": "notice" }, p));
    });
    var box = PS.clear(document.getElementById("runs"));
    if (!data.runs.length) {
      box.appendChild(h("p", { "class": "notice info" }, "No run folders found. Write one " +
        "with 'patchsim run configs/edition2.yaml', or start the server with run folders: " +
        "'patchsim serve RUN_DIR ...'."));
    } else {
      box.appendChild(h("table", { "class": "data", id: "runs-table" },
        h("thead", null, h("tr", null, h("th", null, "run"), h("th", null, "rulesets"),
          h("th", null, "bots"), h("th", { "class": "num" }, "games"),
          h("th", null, "report"), h("th", null, "status"))),
        h("tbody", null, data.runs.map(runRow))));
    }
    var saved = PS.clear(document.getElementById("saved"));
    if (!data.saved.length) {
      saved.appendChild(h("p", { "class": "muted small" }, "None yet."));
    } else {
      saved.appendChild(h("ul", null, data.saved.map(function (name) {
        return h("li", null, h("a", { href: "/game?saved=" + encodeURIComponent(name) }, name));
      })));
    }
  }

  PS.api("/api/runs").then(show).catch(function (e) {
    PS.clear(document.getElementById("runs")).appendChild(
      h("p", { "class": "notice" }, "Cannot list the runs: " + e.message));
  });
}());
