"""Independent pure-Python reference referee, used by the test-suite as an oracle."""
