"""Calibration: fit a platform profile from measurement records; ships profiles and records."""
