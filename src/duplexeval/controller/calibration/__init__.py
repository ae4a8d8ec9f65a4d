"""Calibration: thresholds chosen on development data, frozen into an evaluation policy."""
