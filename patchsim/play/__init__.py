"""Playing games: one game between any bots, the compiled game loops, and the batch runner
(configuration, dealing, batches, storage, parallel execution with resume). Builds on engine
and bots.
"""
