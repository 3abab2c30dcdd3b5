"""``patchsim serve``: a local web app to look at runs, step through games and play a bot.

- :mod:`patchsim.engine.view` (below both web and reporting): positions as JSON, read from
  the engine, and board.js that draws them.
- :mod:`patchsim.web.runs`: the run folders the server was given and their files;
  :mod:`patchsim.web.games` their games tables (filtered, one game replayed);
  :mod:`patchsim.web.records` game records a page opens; :mod:`patchsim.web.paths` the
  folders and the paths a request may name, every one kept inside those folders.
- :mod:`patchsim.web.play`: games against a bot in the browser, applied by the engine.
- :mod:`patchsim.web.app`: the Starlette application (routes, errors, pages).
- ``static/``: the pages, plain HTML, CSS and JavaScript written for this project; nothing is
  loaded from the network.
"""

from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"
