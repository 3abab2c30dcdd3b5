"""A bot module that calls sys.exit while it is imported (a user's script left as is)."""

import sys

sys.exit(4)
