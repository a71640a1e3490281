"""Simulate one microbenchmark point on a platform: the DES's prediction, engine picked once, time guarded.

A service of the simulator that the layers above share: the report (predicted vs measured)
and calibration (synthetic records) each call it, so both depend downwards only.

``engine="fast"`` (the numba twin) is used when it exists, else the SimPy reference. A point
whose simulation does not finish within ``timeout_s`` (an engine bug must not hang a report)
yields ``None`` and is counted, never guessed.
"""

from __future__ import annotations

import importlib.util
import signal
import threading
from contextlib import contextmanager

from xsim.builders import microbench
from xsim.des import simulate
from xsim.params import resolve
from xsim.platform import Platform

DEFAULT_TIMEOUT_S = 5.0


class _Timeout(Exception):
    pass


_ENGINE: list[str] = []


def _probe_summaries(platform: Platform, engine: str) -> list:
    out = []
    burst_bytes = 16 * max(1, round(2.0 * platform.capacity_bytes(8) / 8 / 16))  # V = 2 Q: backpressured
    for aligned, gap_us in ((True, 0.0), (True, 0.5), (False, 0.0)):
        params = micro_params("periodic", 8, burst_bytes, gap_us, aligned, 8, 2)
        summary = microbench.summarize(simulate(microbench.build(params, platform), engine=engine, trace=False), params)
        out += [summary["issue_us"]["mean"], summary["period_us"]["mean"]]
    return out


def default_engine(platform: Platform | None = None) -> str:
    """``fast`` when ``xsim.des.fast_engine`` exists and agrees with the SimPy reference on a
    few tiny probe points (it is compiled here, outside any time limit); else ``simpy``.
    Decided once per process."""
    if _ENGINE:
        return _ENGINE[0]
    engine = "simpy"
    if importlib.util.find_spec("xsim.des.fast_engine") is not None and platform is not None:
        try:
            fast, ref = _probe_summaries(platform, "fast"), _probe_summaries(platform, "simpy")
            if all(abs(a - b) <= 1e-9 * max(1.0, abs(b)) for a, b in zip(fast, ref)):
                engine = "fast"
        except Exception:  # noqa: BLE001  an unfinished twin must not break a report
            engine = "simpy"
    _ENGINE.append(engine)
    return engine


@contextmanager
def _time_limit(seconds: float):
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def micro_params(mode: str, producers: int, burst_bytes: float, gap_us: float, aligned: bool,
                 bursts: int, warmup_bursts: int) -> dict:
    """Resolved microbench builder parameters for one measured point."""
    return resolve(microbench.PARAMS, {"mode": mode, "producers": producers, "burst_bytes": burst_bytes,
                                       "gap_us": gap_us, "aligned": aligned, "bursts": bursts,
                                       "warmup_bursts": warmup_bursts}, "micro point")


def simulate_point(params: dict, platform: Platform, engine: str | None = None,
                   timeout_s: float | None = DEFAULT_TIMEOUT_S) -> dict | None:
    """The builder's summary of one simulated point, or None if it did not finish in time (or
    is more than the machine can hold: :mod:`xsim.budget`)."""
    from xsim.budget import estimate

    engine = engine or default_engine(platform)
    try:
        if estimate(microbench, params, platform, engine, trace=False).problem() is not None:
            return None
    except ValueError:  # a point the builder refuses (e.g. no burst after the warm-up)
        return None
    workload = microbench.build(params, platform)
    try:
        with _time_limit(timeout_s):
            result = simulate(workload, engine=engine, trace=False)
    except _Timeout:
        return None
    return microbench.summarize(result, params)
