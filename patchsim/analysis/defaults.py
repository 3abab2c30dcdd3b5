"""The error rate and the margin every study uses unless told otherwise, named once.

Apart from :mod:`patchsim.analysis.estimators` (which re-exports them) so that the command
line can give them as option defaults without loading scipy on ``--help``."""

from __future__ import annotations

ALPHA = 0.05  # the error rate of every test and verdict (95% intervals), unless one is given
VERDICT_LEVEL = 0.95  # a verdict is decided by, and prints, the 95% interval of the change
DEFAULT_MARGIN = 0.02  # equivalence margin of the first-seat win rate: +-2 points
