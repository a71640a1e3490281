"""Shipped scenario files (TOML), read with importlib.resources."""
