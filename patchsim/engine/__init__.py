"""The rules core: ruleset data, compiled tables, the compiled rules (state, legal moves,
apply), the game API, records and text rendering. Imports nothing else from patchsim.
"""
