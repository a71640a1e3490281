"""The report's DES runs: :mod:`xsim.simulate_point` (simulating a micro point lives below the report)."""

from xsim.simulate_point import DEFAULT_TIMEOUT_S, default_engine, micro_params, simulate_point  # noqa: F401
