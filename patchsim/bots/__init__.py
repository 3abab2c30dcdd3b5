"""Bots behind one small protocol: the registry of built-in bots and bot specs, the compiled
scripted policies, the search, and the heuristics they share. Builds on patchsim.engine.
"""
