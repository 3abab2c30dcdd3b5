"""Bots behind one small protocol: the registry of built-in bots and bot specs, the compiled
scripted policies, the search, and the heuristics they share. Builds on patchsim.engine.
"""

# the learned evaluation registers itself with the bot registry (mcts(eval=learned))
from patchsim.bots import learned as _learned  # noqa: E402, F401
