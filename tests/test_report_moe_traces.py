"""The moe report's traced-runs panel (xsim.report.moe_traces) on a report of test records and traces made here
from the DES's own run of the same table (test data, never shipped)."""

import numpy as np
import pytest

from calibration.records import load_records
from test_report_moe import write_records
from xsim.builders import moe as builder
from xsim.des import simulate
from xsim.platform import resolve_platform
from xsim.report import moe as rmoe
from xsim.report import moe_page, moe_traces

CONFIG = "moe1-qwen3-30b-bf16-zipf-4096"


@pytest.fixture(scope="module")
def rep(tmp_path_factory):
    path = write_records(tmp_path_factory.mktemp("r") / "test-moe.jsonl")
    return rmoe.build(load_records([path]), resolve_platform("h200-pcie-host"), spread_seeds=1)


def fake_traces(rep, config=CONFIG) -> dict:
    """A host trace per schedule of ``config``: the DES's own run of the report's table, as stamps (ns)."""
    row = next(r for r in rep.rows if r.config == config)
    arrays = {}
    for schedule, label in (("wave", "wave"), ("interleaved", f"int@{row.params['lead']:g}")):
        cfg = builder.Config(row.params | {"spread_seeds": 1}, rep.platform, rep.mainloops or None)
        table = cfg.table(schedule)
        t = simulate(cfg.workload(schedule, table), engine="fast", trace=False).times
        l2 = table.tiles[:, 0] == 1
        start = np.where(l2, t.mainloop_start - 1.0, t.mainloop_start - 0.5)
        store0 = np.where(l2, t.issue_start, t.mainloop_end)
        store1 = np.where(l2, t.issue_end, t.mainloop_end)
        cols = [start, t.mainloop_start, t.mainloop_end, store0, store1, np.maximum(store1, t.mainloop_end) + 0.1]
        stamps = (np.stack(cols, axis=1) * 1e3 + 2e3).astype(np.int64)
        key = f"{config}|{label}"
        arrays |= {f"{key}|host|stamps": stamps, f"{key}|tiles": table.tiles, f"{key}|offsets": table.offsets,
                   f"{key}|store_bytes": np.where(l2, 32768, 0)}
    return arrays


def test_every_traced_run_meets_the_des_of_its_table(rep):
    points, stale = moe_traces.traced_points(rep, fake_traces(rep))
    assert stale == [] and sorted(p.schedule for p in points) == ["interleaved", "wave"]
    for p in points:
        # the trace is the DES's own run; the DES's span goes on while its last stores drain, the stamps' stops
        assert p.rebuilt["span_us"] <= p.simulated["span_us"] and p.rebuilt["q_max"] > 0 < p.simulated["q_max"]
        t, measured, simulated = p.series
        assert len(t) == len(measured) == len(simulated) and measured.max() > 0 and simulated.max() > 0
    assert moe_traces.worst_config(rep, points) == CONFIG
    rows = moe_traces.table_rows(points)
    assert len(rows) == 4 and all(len(r) == len(moe_traces.HEADER) for r in rows)


def test_the_section_shows_the_panel_only_with_traces(rep, monkeypatch):
    assert "moe_xstage_traced" not in [f.name for f in moe_page.section(rep).figures]    # none shipped for it
    monkeypatch.setattr(moe_traces, "shipped_fused_traces", lambda platform: (fake_traces(rep), ["abc1234"]))
    section = moe_page.section(rep)
    assert [f.name for f in section.figures][-1] == "moe_xstage_traced"
    assert len(section.details) == 4


def test_a_trace_of_another_table_is_left_out_and_named(rep, monkeypatch):
    arrays = fake_traces(rep)
    key = next(k for k in arrays if k.endswith("|tiles") and "|wave|" in k)
    arrays[key] = arrays[key][::-1].copy()
    points, stale = moe_traces.traced_points(rep, arrays)
    assert [p.schedule for p in points] == ["interleaved"] and stale == [f"{CONFIG}|wave"]
    assert moe_traces.worst_config(rep, points) is None        # one schedule alone draws no figure
    monkeypatch.setattr(moe_traces, "shipped_fused_traces", lambda platform: (arrays, ["abc1234"]))
    assert "moe_xstage_traced" not in [f.name for f in moe_page.section(rep).figures]


def test_traces_of_configs_the_report_did_not_measure_are_left_out(rep):
    arrays = {k.replace(CONFIG, "moe1-unmeasured"): v for k, v in fake_traces(rep).items()}
    assert moe_traces.traced_points(rep, arrays) == ([], []) and moe_traces.worst_config(rep, []) is None
