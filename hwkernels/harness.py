"""One measurement loop for every runner: poison -> (flush L2) -> run -> check -> repeat -> Stats.

    m = measure(run, repeats=20, warmup=1, poison=poison_fn, check=check_fn, flush_l2=True)
    if m.ok: records.make_record(..., {k: s.to_dict() for k, s in m.stats.items()}, m.check_dict(), ...)

- ``run()`` launches once and synchronizes; it returns ``{name: samples}`` (a number or a 1-D
  array of microseconds each) or None on a rank that measures nothing. Keys that start with
  ``_`` carry raw results (kept in ``m.raw``, not summarized).
- ``poison()`` runs before every launch, ``check(result) -> (ok, max_abs_err)`` after it (the
  warm-up launches too: they are checked, never kept). The first failed check stops the loop:
  ``m.ok`` is False and ``m.stats`` None, so no time is ever kept for a wrong result.
- Several ranks: ``sync()`` runs before and after each launch (a barrier) and ``agree(ok, err)``
  combines every rank's verdict (AND of oks, max of errors), so all ranks stop together.
- ``flush_l2``: a device buffer of twice the L2 is written after poisoning, so neither the
  poison nor the previous launch's lines sit in the L2 (they would merge with host-bound stores).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .stats import Stats, summarize


@dataclass
class Measurement:
    ok: bool
    max_abs_err: float
    stats: dict[str, Stats] | None
    samples: dict[str, np.ndarray] = field(default_factory=dict)
    raw: list = field(default_factory=list)

    def check_dict(self) -> dict:
        return {"ok": self.ok, "max_abs_err": self.max_abs_err}

    def stats_dicts(self) -> dict | None:
        return None if self.stats is None else {k: s.to_dict() for k, s in self.stats.items()}


def _no_check(result) -> tuple[bool, float]:
    return True, 0.0


def gather(results: list[dict]) -> dict[str, np.ndarray]:
    """Concatenate each numeric key's samples over the kept runs (keys starting with '_' skipped)."""
    out: dict[str, list] = {}
    for res in results:
        for name, value in res.items():
            if not name.startswith("_"):
                out.setdefault(name, []).append(np.atleast_1d(np.asarray(value, dtype=np.float64)).ravel())
    return {k: np.concatenate(v) for k, v in out.items()}


def measure(run, repeats: int, warmup: int = 1, poison=None, check=None, flush_l2: bool = False,
            sync=None, agree=None, heat=None) -> Measurement:
    """Run ``warmup + repeats`` checked launches; Stats of the kept ones (see the module doc).
    ``heat``: enqueued after each trial's poison, right before its timed run (untimed work that
    brings the GPU's power and clock to the steady state the timed run then starts in; the same
    kernels as ``run``, so they overwrite the poison: the check then covers the kernels that
    ran, heat and timed run alike)."""
    if repeats < 1 or warmup < 0:
        raise ValueError('"repeats" must be >= 1 and "warmup" >= 0.')
    check = check or _no_check
    kept, worst = [], 0.0
    for i in range(warmup + repeats):
        if poison is not None:
            poison()
        if heat is not None:
            heat()
        if flush_l2:
            flush_l2_cache()
        if sync is not None:
            sync()
        result = run()
        if sync is not None:
            sync()
        ok, err = check(result)
        if agree is not None:
            ok, err = agree(ok, err)
        worst = max(worst, float(err))
        if not ok:
            return Measurement(False, worst, None)
        if i >= warmup and result is not None:
            kept.append(result)
    return from_kept(kept, worst)


def from_kept(kept: list, worst: float) -> Measurement:
    """The Measurement of checked, kept run results (``run()``'s dicts, in trial order)."""
    samples = gather(kept)
    return Measurement(True, worst, {k: summarize(v) for k, v in samples.items()}, samples, kept)


_SCRATCH = {}


def clock_sums_mhz(sums) -> float | None:
    """The mean SM clock of the launches behind a kernel's CLK sums (int64 [cycles, ns], every
    program's %clock64 and %globaltimer deltas added up): None when no launch added any."""
    cycles, ns = (int(x) for x in sums.tolist())
    return 1e3 * cycles / ns if ns > 0 else None


def flush_l2_cache() -> None:
    """Write a device buffer of twice the L2 (evicts every line, host-bound ones included)."""
    import torch

    dev = torch.cuda.current_device()
    buf = _SCRATCH.get(dev)
    if buf is None:
        l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 60 * 2**20)
        buf = _SCRATCH[dev] = torch.empty(2 * l2, dtype=torch.uint8, device=f"cuda:{dev}")
    buf.fill_(0x5A)


def cuda_event_us(fn) -> float:
    """Microseconds of one call of ``fn`` on the current stream, by CUDA events."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3


def capture_graph(fn):
    """``fn`` captured in a CUDA graph (after one eager warm-up call on a side stream)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def graph_replay_us(fn, replays: int, graph=None) -> float:
    """Per-replay microseconds of ``replays`` back-to-back replays of ``fn``'s CUDA graph."""
    if replays < 1:
        raise ValueError('"replays" must be >= 1.')
    graph = graph or capture_graph(fn)

    def replay_all():
        for _ in range(replays):
            graph.replay()
    return cuda_event_us(replay_all) / replays
