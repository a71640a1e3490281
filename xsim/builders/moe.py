"""A MegaMoE layer (paper Secs. 4.2, 5.2) as the tile streams its fused kernel runs.

The scheduler (:mod:`xsim.moe.schedule`) emits the very tile table the kernel executes; the
table becomes a workload (:mod:`xsim.moe.des_workload`) whose mainloop times come from the
compute model (:mod:`xsim.moe.compute`: measured records, else a roofline). ``schedule =
both`` simulates the expert-wave and the interleaved tables and reports the speedup
(:func:`simulate`) and the selector's pick (:mod:`xsim.moe.selector`); ``predict`` gives the
closed forms (eqs. 12-16) for the same config.
"""

from __future__ import annotations

import copy

from dataclasses import replace

import numpy as np

from xsim.closedform.megamoe import schedule_spans
from xsim.moe import metrics, selector
from xsim.moe.compute import gpu_of, mainloop_model
from xsim.moe.des_workload import RELEASES, mblock_remote_rows, tile_workload
from xsim.moe.layout import expert_layout
from xsim.moe.routing import ROUTINGS, route
from xsim.moe.schedule import SCHEDULES, d_knee, default_lead, experts_per_wave, schedule_table
from xsim.moe.shapes import PRECISIONS, MoEShape
from xsim.spread import tile_factors
from xsim.moe.tiles import L1, L2, TileTable
from xsim.params import Param
from xsim.platform import Platform

PARAMS = {
    "hidden": Param("int", 2048, "model hidden size", minimum=1),
    "intermediate": Param("int", 768, "expert intermediate size (moe_intermediate_size)", minimum=1),
    "experts": Param("int", 128, "routed experts (all ranks)", minimum=1),
    "topk": Param("int", 8, "experts per token", minimum=1),
    "tokens": Param("int", 4096, "tokens per rank", minimum=1),
    "ep": Param("int", 1, "expert-parallel ranks", minimum=1),
    "precision": Param("str", "bf16", "bf16, or fp8 e4m3 weights and activations (W8A8)", choices=PRECISIONS),
    "block_m": Param("int", 128, "rows per m-block", minimum=1),
    "block_n1": Param("int", 128, "intermediate columns per Linear-1 tile (gate and up)", minimum=1),
    "block_n2": Param("int", 128, "hidden columns per Linear-2 tile", minimum=1),
    "routing": Param("str", "balanced", "token routing", choices=ROUTINGS),
    "skew": Param("float", 1.2, "zipf exponent, or the hot expert's share of tokens", minimum=0),
    "seed": Param("int", 0, "routing seed", minimum=0),
    "schedule": Param("str", "both", "which tile table", choices=("wave", "interleaved", "both")),
    "lead": Param("float", -1.0, "Algorithm 1's lead D in rows (< 0: ceil(2 D_knee), at least 1; the one-GPU "
                  "scenarios ship the what-if tool's pick, xsim.moe.lead)"),
    "n_streams": Param("int", 0, "persistent CTAs (0: one per SM of the platform)", minimum=0),
    "staging_depth": Param("int", 0, "staging slots S (0: the compute role issues its own stores)", minimum=0),
    "l1_release": Param("str", "drain", "when an L1 tile's l2_full signal takes effect", choices=RELEASES),
    "mainloop_cv": Param("float", -1.0, "per-tile mainloop spread, coefficient of variation (< 0: the compute "
                         "model's measured one per tile kind, 0 without records; 0: every tile alike)"),
    "spread_scale": Param("float", 1.0, "the measured per-tile spread times this (mainloop_cv < 0 only): a "
                          "sensitivity of how much of the measured spread is independent from tile to tile", minimum=0),
    "spread_seed": Param("int", 0, "seed of the per-tile spread (a hash of each tile's identity)", minimum=0),
    "spread_seeds": Param("int", 1, "spread seeds whose kernel times are averaged (spread_seed, spread_seed + 1, "
                          "...): the expectation over the spread instead of one draw", minimum=1),
    "compute": Param("str", "auto", "mainloop times: measured records if any, else roofline; contention: "
                     "the records' means shaped by a local run under shared HBM (xsim.moe.contention_model)",
                     choices=("auto", "roofline", "contention")),
    "hbm_tbps": Param("float", -1.0, "compute = contention: HBM bandwidth, TB/s (<= 0: hbm_fraction times the "
                      "GPU's roofline figure)"),
    "hbm_fraction": Param("float", 1.0, "compute = contention, hbm_tbps <= 0: the fraction of the GPU's roofline "
                          "HBM figure the mainloops share", minimum=1e-3, maximum=1.0),
    "hbm_share": Param("str", "fair", "compute = contention: how running mainloops share HBM (max-min fair, or "
                       "by the bytes a pipeline stage keeps in flight)", choices=("fair", "inflight")),
    "contention_anchor": Param("str", "mean", "compute = contention: mean (scale the work to the records' means), "
                               "ratio (one run, each kind's mainloops then scaled to the records' means), schedule "
                               "(each schedule to its own fused-local means: a measured input, as mainloop_pool = "
                               "schedule) or none", choices=("mean", "ratio", "schedule", "none")),
    "contention_spread": Param("str", "compute", "compute = contention: the per-tile spread on the tensor-core time "
                               "only (compute) or on the bytes too (work)", choices=("compute", "work")),
    "contention_cv": Param("str", "measured", "compute = contention: each tile's drawn spread is the measured one "
                           "(measured) or what is left of it once the pre-pass's own spread in context (a run without "
                           "the draw) is taken out in quadrature (residual)", choices=("measured", "residual")),
    "contention_detail": Param("str", "tile", "compute = contention: tile (each tile its mainloop in context) or "
                               "kind (each schedule's kind its mean in context, times the spread as auto)",
                               choices=("tile", "kind")),
    "mainloop_pool": Param("str", "layer", "which records give a tile's mean mainloop and spread: layer (this very "
                           "layer's: shape, experts, top-k, tokens, EP; else as shape) or shape (every layer of "
                           "this hidden and intermediate) or schedule (as layer, each schedule its own measured local mean "
                           "and spread: a measured input, not a prediction of the schedules' difference)",
                           choices=("layer", "shape", "schedule")),
    "combine_rate_scale": Param("float", 1.0, "the link's drain rate for the Combine's stores over the profile's "
                                "(a what-if: the profile's rate is the microbenchmark's contiguous bursts; the "
                                "Combine stores 2 x block_n2-byte row segments)", minimum=1e-3),
    "mainloop_records": Param("str", "", "moe records file (default: calibration/records/<platform>-moe.jsonl)"),
    "tile_fixed_us": Param("us", 0.0, "roofline's fixed per-tile cost", minimum=0),
    "l2_epilogue_us": Param("us", -1.0, "fixed epilogue time before a Linear-2 tile's first store "
                            "(< 0: the compute model's measured one, 0 without records)"),
    "prologue_us": Param("us", -1.0, "fixed time before each program's first tile: the kernel's time outside "
                         "its tiles (< 0: the compute model's measured one, 0 without records)"),
    "compute_scale": Param("float", 1.0, "every tile's compute (mainloop, its wait overhead, epilogues, prologue) "
                           "times this: the kernel at the compute model's clock over this (xsim.moe.clocked, the "
                           "power cap's clock)", minimum=1e-3),
    "kernel_overhead_us": Param("us", 0.0, "fixed kernel time outside the tiles (launch, Dispatch)", minimum=0),
    "l2_cache_bytes": Param("bytes", 0, "L2 cache the selector's locality model uses (0: the GPU's)", minimum=0),
    "tile_table": Param("str", "", "a tile table (.npz with offsets, tiles) to run instead of the schedule's"),
}


class Config:
    """Everything a MoE run derives from its params once: shape, layout, compute times."""

    def __init__(self, params: dict, platform: Platform, mainloop_records: list[dict] | None = None):
        self.params, self.platform = params, _scaled_link(platform, params["combine_rate_scale"])
        self.shape = MoEShape(hidden=params["hidden"], intermediate=params["intermediate"],
                              experts=params["experts"], topk=params["topk"], tokens=params["tokens"],
                              ep=params["ep"], precision=params["precision"], block_m=params["block_m"],
                              block_n1=params["block_n1"], block_n2=params["block_n2"])
        self.routing = route(self.shape, params["routing"], params["skew"], params["seed"])
        self.layout = expert_layout(self.shape, self.routing, rank=0)
        self.n_streams = params["n_streams"] or platform.sms
        self.lead = default_lead(self.shape, self.n_streams) if params["lead"] < 0 else params["lead"]
        self.model = mainloop_model(platform.name, platform.sms, params["mainloop_records"],
                                    use_records=params["compute"] != "roofline", fixed_us=params["tile_fixed_us"],
                                    records=mainloop_records, pool=params["mainloop_pool"])
        used = self.layout.rows_per_expert > 0
        reuse = float(np.mean(np.diff(self.layout.expert_mblock)[used])) if used.any() else 1.0
        # the measured bookkeeping and wait (nothing pending) before a mainloop are part of every tile
        self.wait_overhead_us = {k: self.model.before_mainloop_us(self.shape, k) for k in ("l1", "l2")}
        self.t_l1_us = self.model.l1_us(self.shape, reuse) + self.wait_overhead_us["l1"]
        self.t_l2_us = self.model.l2_us(self.shape, reuse) + self.wait_overhead_us["l2"]
        self.l1_epilogue_us = self.model.l1_epilogue_us(self.shape)
        self.l2_epilogue_us = (self.model.l2_epilogue_us(self.shape) if params["l2_epilogue_us"] < 0
                               else params["l2_epilogue_us"])
        self.prologue_us = self.model.kernel_outside_us if params["prologue_us"] < 0 else params["prologue_us"]
        given = params["mainloop_cv"]
        self.mainloop_cv = {k: self.model.spread(self.shape, k) * params["spread_scale"] if given < 0 else given
                            for k in ("l1", "l2")}
        self._tables: dict = {}
        self.prepass = prepass(self) if params["compute"] == "contention" else None

    def table(self, schedule: str):
        if schedule not in self._tables:
            self._tables[schedule] = self._make_table(schedule)
        return self._tables[schedule]

    def _make_table(self, schedule: str):
        if self.params["tile_table"]:
            table = load_table(self.params["tile_table"], self.shape, self.layout)
        else:
            table = schedule_table(self.shape, self.layout, schedule, self.n_streams, self.lead)
        table.validate()
        return table

    def workload(self, schedule: str, table=None):
        p = self.params
        table = self.table(schedule) if table is None else table
        context = self.context_mainloops_us(schedule) if self.prepass is not None else None  # may set the spread
        factors = self._factors(table)
        t_l1, t_l2 = self.t_l1_us, self.t_l2_us
        own = {k: self.model.schedule_mainloop(self.shape, k, schedule) for k in ("l1", "l2")}
        if p["mainloop_pool"] == "schedule" and self.prepass is None and all(own.values()):
            cv = {k: own[k][1] if p["mainloop_cv"] < 0 else p["mainloop_cv"] for k in own}
            factors = tile_factors(table.tiles, {L1: cv["l1"], L2: cv["l2"]}, p["spread_seed"])
            t_l1, t_l2 = (own[k][0] + self.wait_overhead_us[k] for k in ("l1", "l2"))
        if self.prepass is not None and p["contention_detail"] == "tile":   # the spread is in it already
            factors, t_l1, t_l2 = context, 1.0, 1.0
        elif self.prepass is not None:
            kind = table.tiles[:, 0]
            t_l1, t_l2 = (float(context[kind == k].mean()) if np.any(kind == k) else 0.0 for k in (L1, L2))
        c = p["compute_scale"]
        main = 1.0 if self.prepass is not None else c   # the pre-pass's mainloops are at this clock already
        return tile_workload(table, self.shape, self.layout, self.platform, t_l1 * main,
                             t_l2 * main, p["staging_depth"], p["l1_release"], self.l2_epilogue_us * c,
                             self.l1_epilogue_us * c, self.prologue_us * c, factors)

    def context_mainloops_us(self, schedule: str) -> np.ndarray:
        """compute = contention: every schedule's local run once (the anchor pools them), then this
        schedule's per-tile mainloops in context plus the measured wait overhead."""
        names = ("file",) if self.params["tile_table"] else SCHEDULES
        if not self.prepass.runs:
            tables = {name: self.table(name) for name in names}
            issue = {name: self._l2_issue_us(t) for name, t in tables.items()}
            if self.params["contention_cv"] == "residual":   # the context's own spread first, no draw
                from xsim.moe.contention_model import residual_cv

                self.prepass.run_all({name: (t, np.ones(t.n_tiles), issue[name]) for name, t in tables.items()})
                explained = self.prepass.context_cv()
                self.mainloop_cv = {k: residual_cv(self.mainloop_cv[k], explained[k]) for k in ("l1", "l2")}
            self.prepass.run_all({name: (t, self._factors(t), issue[name]) for name, t in tables.items()})
        name = "file" if self.params["tile_table"] else schedule
        kind = self.prepass.runs[name][0].tiles[:, 0]
        return self.prepass.mainloops_us(name) + self.params["compute_scale"] * np.where(
            kind == L1, self.wait_overhead_us["l1"], self.wait_overhead_us["l2"])

    def _factors(self, table) -> np.ndarray:
        """Each tile's mainloop spread factor (xsim.spread, keyed by the tile's identity)."""
        return tile_factors(table.tiles, {L1: self.mainloop_cv["l1"], L2: self.mainloop_cv["l2"]},
                            self.params["spread_seed"])

    def _l2_issue_us(self, table) -> np.ndarray:
        """Each tile's local Combine issue time (t_iss0 of its bytes; 0 for L1 tiles)."""
        combine = self.shape.combine_bytes(1) * mblock_remote_rows(self.shape, self.layout)
        per_mblock = np.array([self.platform.t_iss0_us(self.n_streams, b) if b > 0 else 0.0 for b in combine])
        return np.where(table.tiles[:, 0] == L2, per_mblock[table.tiles[:, 2]], 0.0)

    def locality(self, table, result):
        capacity = self.params["l2_cache_bytes"] or selector.L2_CACHE_BYTES[gpu_of(self.platform.name)]
        return selector.locality(self.shape, table.tiles, result, capacity, self.model.peaks["hbm_tbps"])


def _scaled_link(platform: Platform, scale: float) -> Platform:
    """The platform with its drain rates times ``scale`` (1: the platform itself)."""
    if scale == 1.0:
        return platform
    link = None if platform.link_drain_rate_gbps is None else platform.link_drain_rate_gbps * scale
    return replace(platform, drain_rate_gbps=platform.drain_rate_gbps * scale, link_drain_rate_gbps=link)


def without_link(platform: Platform) -> Platform:
    """The platform as the local-Combine control sees it: the same issue costs, a drain 1000x
    faster than the link's (device memory), no load gate."""
    rate = platform.drain_rate_gbps * 1e3
    link = None if platform.link_drain_rate_gbps is None else platform.link_drain_rate_gbps * 1e3
    return replace(platform, drain_rate_gbps=rate, link_drain_rate_gbps=link, load_gate=None)


def prepass(cfg: Config):
    """The contention pre-pass of a config (:mod:`xsim.moe.contention_model`), on the records its
    compute model was made from."""
    from xsim.moe import contention_model as cm

    p = cfg.params
    records = cfg.model.records
    hbm = p["hbm_tbps"] if p["hbm_tbps"] > 0 else p["hbm_fraction"] * cfg.model.peaks["hbm_tbps"]
    costs = cm.FixedCosts(cfg.wait_overhead_us["l1"], cfg.wait_overhead_us["l2"], cfg.l1_epilogue_us,
                          cfg.l2_epilogue_us, cfg.prologue_us)
    means = {k: getattr(cfg, f"t_{k}_us") - cfg.wait_overhead_us[k] for k in ("l1", "l2")}
    if p["contention_anchor"] == "schedule":
        own = {name: {k: cfg.model.schedule_mainloop(cfg.shape, k, name) for k in ("l1", "l2")} for name in SCHEDULES}
        means = {name: {k: v[0] for k, v in m.items()} for name, m in own.items() if all(m.values())}
    return cm.Prepass(cfg.shape, cfg.layout.mblock_valid_rows(), cm.calibrate_compute_us(records, hbm, cfg.n_streams),
                      costs, means, hbm, p["hbm_share"], p["contention_anchor"], p["contention_spread"],
                      p["compute_scale"])


def load_table(path: str, shape: MoEShape, layout) -> TileTable:
    """A tile table from an .npz file (arrays ``offsets`` and ``tiles``, the contract's dtypes)."""
    import io

    from xsim.fileio import read_bytes

    try:
        with np.load(io.BytesIO(read_bytes(path, "tile table", ValueError))) as data:
            offsets, tiles = data["offsets"].astype(np.int32), data["tiles"].astype(np.int32)
    except (OSError, KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"cannot read tile table {path}: {exc}") from None
    return TileTable(offsets, tiles, shape.l1_nblocks, shape.l2_nblocks, layout.n_mblocks, schedule="file")


def size(params: dict, platform: Platform) -> tuple[int, float]:
    """An upper bound of one schedule's tiles, before routing (nothing allocated): the rows this
    rank's experts can receive (every token of every rank, at most ``min(topk, local experts)``
    rows each) in m-blocks, each with its Linear-1 and Linear-2 tiles. The simulated time of a
    layer is microseconds to milliseconds: not bounded here (0)."""
    shape = MoEShape(hidden=params["hidden"], intermediate=params["intermediate"], experts=params["experts"],
                     topk=params["topk"], tokens=params["tokens"], ep=params["ep"], precision=params["precision"],
                     block_m=params["block_m"], block_n1=params["block_n1"], block_n2=params["block_n2"])
    rows = shape.tokens * shape.ep * min(shape.topk, shape.experts_local)
    mblocks = -(-rows // shape.block_m) + shape.experts_local
    return mblocks * (shape.l1_nblocks + shape.l2_nblocks), 0.0


def runs(params: dict) -> int:
    """DES runs per point: each schedule asked for, once per spread seed."""
    return (2 if params["schedule"] == "both" else 1) * params["spread_seeds"]


def build(params: dict, platform: Platform):
    """The workload of one schedule (``both``: the interleaved one; see :func:`simulate`)."""
    schedule = "interleaved" if params["schedule"] == "both" else params["schedule"]
    return Config(params, platform).workload(schedule)


def simulate(params: dict, platform: Platform, engine: str = "fast", trace: bool = True,
             mainloop_records: list[dict] | None = None, mainloops_us: tuple[float, float] | None = None,
             configs: dict | None = None):
    """Run the requested schedule(s): (the last result, its summary with both schedules).

    ``mainloops_us`` (T_L2, T_L1) replaces the compute model's times (e.g. measured ones).
    ``configs``: spread seed -> Config, filled by a first call and reused by a second one with the same
    params on a platform that differs only in its link (:func:`without_link`): the tables, compute
    model and contention pre-pass (a local run, link-free) are the first call's, the link this call's.
    """
    from xsim.des import simulate as run

    configs = {} if configs is None else configs   # spread seed -> its Config, shared by the schedules too
    cfg = _config(params, platform, mainloop_records, params["spread_seed"], configs)
    if mainloops_us is not None:
        cfg.t_l2_us, cfg.t_l1_us = mainloops_us
    schedules = ("wave", "interleaved") if params["schedule"] == "both" else (params["schedule"],)
    out, result, local = {}, None, {}
    for schedule in schedules:
        table = cfg.table(schedule)
        result = run(cfg.workload(schedule, table), engine=engine, trace=trace)
        out[schedule] = metrics.summarize(result, params["kernel_overhead_us"])
        if params["spread_seeds"] > 1:
            _average_seeds(out[schedule], params, platform, engine, mainloop_records, mainloops_us, schedule, configs)
        if len(schedules) > 1:
            local[schedule] = cfg.locality(table, result)
    summary = _header(cfg)
    summary.update(out if len(out) > 1 else out[schedules[0]])
    if len(out) > 1:
        summary["speedup"] = out["wave"]["kernel_us"] / out["interleaved"]["kernel_us"]
        summary["selector"] = selector.pick(out["wave"]["kernel_us"], out["interleaved"]["kernel_us"],
                                            local["wave"], local["interleaved"]).to_dict()
    return result, summary


def _config(params: dict, platform: Platform, mainloop_records, seed: int, configs: dict) -> Config:
    """The Config of one spread seed: a copy of ``configs[seed]`` on this platform's link where another
    schedule or an earlier call made it (a Config runs every schedule's table in its pre-pass, so nothing
    of it is recomputed), else a new one, kept in ``configs``."""
    if seed in configs:
        cfg = copy.copy(configs[seed])
        cfg.platform = _scaled_link(platform, params["combine_rate_scale"])
        return cfg
    cfg = configs[seed] = Config({**params, "spread_seed": seed}, platform, mainloop_records)
    return cfg


def _average_seeds(summary: dict, params: dict, platform: Platform, engine: str, mainloop_records,
                   mainloops_us, schedule: str, configs: dict) -> None:
    """``spread_seeds`` > 1: the schedule's kernel time is the mean over that many spread seeds
    (the first seed's run gives the distributions); each seed's time in ``kernel_us_per_seed``;
    ``configs``: each seed's Config (:func:`_config`)."""
    from xsim.des import simulate as run

    times = [summary["kernel_us"]]
    for seed in range(params["spread_seed"] + 1, params["spread_seed"] + params["spread_seeds"]):
        cfg = _config(params, platform, mainloop_records, seed, configs)
        if mainloops_us is not None:
            cfg.t_l2_us, cfg.t_l1_us = mainloops_us
        result = run(cfg.workload(schedule), engine=engine, trace=False)
        times.append(result.makespan_us + params["kernel_overhead_us"])
    summary["kernel_us_per_seed"] = times
    summary["kernel_us"] = float(np.mean(times))


def summarize(result, params: dict) -> dict:
    """One schedule's summary (the generic ``xsim simulate`` path)."""
    return metrics.summarize(result, params["kernel_overhead_us"])


def _header(cfg: Config) -> dict:
    source = cfg.model.source(cfg.shape)
    return {
        "compute_model": source, "mainloop_records": cfg.model.records_file or None,
        "l1_mainloop_us": cfg.t_l1_us, "l2_mainloop_us": cfg.t_l2_us,
        "tile_wait_overhead_us": cfg.wait_overhead_us, "l1_epilogue_us": cfg.l1_epilogue_us,
        "l2_epilogue_us": cfg.l2_epilogue_us, "prologue_us": cfg.prologue_us, "mainloop_cv": cfg.mainloop_cv,
        "lead": cfg.lead, "d_knee": d_knee(cfg.shape, cfg.n_streams),
        "experts_per_wave": experts_per_wave(cfg.shape, cfg.n_streams),
        "n_mblocks": cfg.layout.n_mblocks, "rows": cfg.layout.n_rows, "n_streams": cfg.n_streams,
        "max_expert_rows": int(cfg.layout.rows_per_expert.max()) if cfg.layout.rows_per_expert.size else 0,
    }


def predict(params: dict, platform: Platform, mainloop_records: list[dict] | None = None,
            mainloops_us: tuple[float, float] | None = None) -> dict:
    """Closed forms for the config: eq. 14 for both gaps, eqs. 12-13 spans, eq. 15 stalls.

    ``mainloops_us`` (T_L2, T_L1) replaces the compute model's times (e.g. measured ones).
    """
    cfg = Config(params, platform, mainloop_records)
    platform = cfg.platform
    t_l2, t_l1 = mainloops_us if mainloops_us is not None else (cfg.t_l2_us, cfg.t_l1_us)
    shape, k = cfg.shape, cfg.n_streams
    remote = mblock_remote_rows(shape, cfg.layout)
    v_tile = float(shape.combine_bytes(1) * remote.mean()) if remote.size else 0.0
    volume = k * v_tile
    t0 = platform.t_iss0_us(k, v_tile)
    rate = platform.effective_drain_rate_gbps(max(1, shape.ep - 1))
    spans = schedule_spans(volume, t0, t_l2, t_l1, shape.l1_nblocks, shape.l2_nblocks, rate,
                           platform.capacity_bytes(k), covered=params["staging_depth"] >= 2)
    return {"volume_bytes": volume, "t_iss0_us": t0, "drain_rate_gbps": rate, **vars(spans),
            "t_l2_us": t_l2, "t_l1_us": t_l1,
            "d_knee": d_knee(shape, k), "lead": cfg.lead, "compute_model": cfg.model.source(shape)}
