"""Designer studies built on the runner: experiment files, sweeps, the tuner and the balance
gate.
"""
