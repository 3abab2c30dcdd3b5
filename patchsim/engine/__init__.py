"""The rules core: ruleset data, compiled tables, the compiled rules (state, legal moves,
apply), the game API, records and text rendering. Imports nothing else from patchsim but
where numba keeps the compiled code, which is set here, before any compiled function of the
engine (or of the bots and the runner, which import the engine first) is defined.
"""

from patchsim import _jitcache

_jitcache.configure()
