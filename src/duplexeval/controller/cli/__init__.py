"""The `duplexeval controller` commands (evaluate, calibrate, compare; label, run, bench, demo) and the demo."""
