"""SimPy engine vs fast (numba) engine on the `periodic` scenario, 132 producers x 200 bursts.

Measures: SimPy wall time and events/second (SimPy's own event counter, ``env._eid``), what
dominates its cost (cProfile, top functions by own time), the fast engine's wall time on the
same workload (after its one-time compile/cache load, reported separately), that both give the
same per-tile table, and the speed ratio. Not a test: run it, read it, commit the output.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_engines.py [--repeats 3] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import platform as host
import pstats
import time
from pathlib import Path

import numba
import numpy as np
import simpy

from xsim.des import fast_engine, simpy_engine
from xsim.platform import resolve_platform
from xsim.scenario import load_scenario

from provenance import commit_note  # benchmarks/ is the script's folder

SETS = ["producers=132", "bursts=200"]


class CountingEnvironment(simpy.Environment):
    """A SimPy environment that remembers how many events it scheduled (its last ``_eid``)."""

    last: "CountingEnvironment | None" = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        CountingEnvironment.last = self

    @property
    def events(self) -> int:
        return next(self._eid)


def best_of(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return host.processor()


def profile_simpy(workload, top: int = 12) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    simpy_engine.run(workload)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).strip_dirs().sort_stats("tottime").print_stats(top)
    return text.getvalue()


def same_tables(a, b) -> float:
    """Largest relative difference over every numeric column of the per-tile tables."""
    worst = 0.0
    for key, col in a.table().items():
        if col.dtype == object:
            assert list(col) == list(b.table()[key]), key
            continue
        x, y = np.asarray(col, float), np.asarray(b.table()[key], float)
        assert np.array_equal(np.isnan(x), np.isnan(y)), key
        ok = ~np.isnan(x)
        diff = np.abs(x[ok] - y[ok]) / np.maximum(np.abs(x[ok]), 1e-300)
        worst = max(worst, float(diff.max(initial=0.0)))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--platform", default=None, help="profile name or file (default: the default platform)")
    args = parser.parse_args()

    scenario = load_scenario("periodic").with_overrides(SETS)
    platform = resolve_platform(args.platform)
    workload = scenario.build(platform)

    simpy_engine.simpy.Environment = CountingEnvironment  # count events without touching the engine
    simpy_s, reference = best_of(lambda: simpy_engine.run(workload), args.repeats)
    events = CountingEnvironment.last.events
    simpy_engine.simpy.Environment = simpy.Environment

    t0 = time.perf_counter()
    fast_engine.warm_up()
    warm_s = time.perf_counter() - t0
    fast_s, fast = best_of(lambda: fast_engine.run(workload), max(args.repeats, 5))
    worst = same_tables(reference, fast)
    assert worst <= 1e-9, f"engines differ: largest relative difference {worst:g}"
    assert scenario.summarize(reference) == scenario.summarize(fast)

    result = {
        "scenario": "periodic", "sets": SETS, "platform": platform.name, "commit": commit_note(),
        "tiles": workload.n_tiles, "producers": workload.n_producers,
        "simpy_s": simpy_s, "simpy_events": events, "simpy_events_per_s": events / simpy_s,
        "fast_s": fast_s, "fast_first_call_s": warm_s, "speedup": simpy_s / fast_s,
        "max_relative_difference": worst, "summary": scenario.summarize(fast),
        "load_average_1_5_15": __import__("os").getloadavg(),
        "machine": {"cpu": cpu_model(), "cores": __import__("os").cpu_count(), "python": host.python_version(),
                    "numba": numba.__version__, "simpy": simpy.__version__},
    }
    profile = profile_simpy(workload)
    args.out.mkdir(parents=True, exist_ok=True)
    tag = "" if args.platform is None else f"_{Path(args.platform).stem}"
    (args.out / f"bench_engines{tag}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"periodic scenario ({', '.join(SETS)}) on {platform.name}: {workload.n_tiles} tiles ({result['commit']})",
        f"machine: {result['machine']}; load average during the run (1, 5, 15 min): "
        f"{', '.join(f'{x:.2f}' for x in result['load_average_1_5_15'])} (the machine is shared)",
        f"simpy engine: {simpy_s:.3f} s (best of {args.repeats}), {events} SimPy events, "
        f"{events / simpy_s:,.0f} events/s",
        f"fast engine:  {fast_s * 1e3:.1f} ms (best of {max(args.repeats, 5)}); first call in a fresh "
        f"process (compile or cache load): {warm_s:.2f} s",
        f"same per-tile table: largest relative difference {worst:.3g}; same summary: yes",
        f"speed ratio simpy/fast: {simpy_s / fast_s:.1f}x (goal >= 100x: {'met' if simpy_s / fast_s >= 100 else 'NOT met'})",
        "", "SimPy engine, cProfile, top functions by own time:", profile,
    ]
    (args.out / f"bench_engines{tag}.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
