"""The load-gate fit: points from loadgate records, a known gate recovered from DES-made records, the
shipped records' fit (link scope), and ``xsim calibrate``'s loadgate options."""

import json
from importlib import resources

import numpy as np
import pytest

from calibration.loadgate import FIT_CTAS, fit_gate, points
from calibration.loadgate_model import Shape, predict
from calibration.records import RecordError, load_records, parse_texts
from xsim.cli import main
from xsim.load_gate import LoadGate
from xsim.platform import resolve_platform

KIB = 1024
RECORDS = resources.files("calibration") / "records"
PLATFORM = {"gpu": "NVIDIA H200", "gpu_count": 1, "sms": 132, "driver": "580.159.04", "link": "PCIe Gen5 x16"}


def _stats(x):
    return {"mean": x, "median": x, "p10": x, "p90": x, "min": x, "max": x, "n": 1}


def _record(variant, ctas, burst, load_bytes, load_us, storers=None, gap_us=0.0, **extra):
    params = {"variant": variant, "producers": storers or ctas, "ctas": ctas, "burst_bytes": burst,
              "load_bytes": load_bytes, "gap_us": gap_us, "load": "ld.v4", "threads": 256}
    stats = {"load_us": _stats(load_us), **{k: _stats(v) for k, v in extra.items()}}
    return {"schema": "xstage.record/1", "experiment": "loadgate", "kind": variant, "params": params,
            "stats": stats, "check": {"ok": True, "max_abs_err": 0.0}, "platform": PLATFORM, "commit": "c"}


def _engine():
    return "simpy"


def test_shipped_points_have_their_references():
    rs = load_records([RECORDS / "h200-pcie-host-loadgate.jsonl"])
    pts = points(rs)
    groups = {g: sum(p.group == g for p in pts) for g in {p.group for p in pts}}
    assert groups["fit"] == 2 * 3 * 5 and groups["heldout-main"] == 30 and groups["heldout-gap"] == 25
    assert groups["loaders"] == 15 + 2 and groups["controls"] == 40
    assert groups["fit-late"] == 5 and groups["heldout-late"] == 12 and groups["heldout-late-none"] == 4
    assert groups["rerun"] == 4     # the old points measured again in the late run: reported, never fitted
    k132 = next(p for p in pts if p.key == "main_K132_B16K_L256K")
    assert k132.shape.storers == 132 and k132.base[0] == pytest.approx(14.5, abs=0.2)
    assert k132.measured[0] > 3 * k132.base[0]          # the loads waited behind the host stores
    late = next(p for p in pts if p.key == "late_K132_B16K_L256K_S66_C64K_D2")
    assert late.shape.late_ctas == 66 and late.shape.late_bytes == 64 * KIB and late.shape.late_delay_us == 2.0
    assert late.base[0] == pytest.approx(10.5, abs=0.5)   # its own run's reference: 66 CTAs load, none stored


def test_two_suites_at_one_commit_are_two_runs():
    """The H100's full and late suites ran in one call at one commit: the late run's old points are
    still reruns, and each point's B = 0 reference is its own run's (file order, a launch seen again)."""
    pts = points(load_records([RECORDS / "h100-pcie-host-loadgate.jsonl"]))
    groups = {g: sum(p.group == g for p in pts) for g in {p.group for p in pts}}
    assert groups["fit"] == 2 * 3 * 5 and groups["rerun"] == 4 and groups["fit-late"] == 5
    recs = [_record("main", 16, 0, 256 * KIB, 10.0), _record("main", 16, 32 * KIB, 256 * KIB, 20.0),
            _record("main", 16, 0, 256 * KIB, 12.0), _record("main", 16, 32 * KIB, 256 * KIB, 30.0),
            _record("late", 132, 0, 256 * KIB, 11.0, storers=66)]
    for r in recs[4:]:
        r["params"].update(late_ctas=66, late_bytes=0, late_delay_us=0.0, late_bursts=1, late_spin_us=0.0)
    rs = parse_texts([("x.jsonl", "\n".join(json.dumps(r) for r in recs).encode())])
    got = {(p.key, p.group): (p.measured[0], p.base[0]) for p in points(rs)}
    assert got == {("main_K16_B32K_L256K", "fit"): (20.0, 10.0), ("main_K16_B32K_L256K_rerun", "rerun"): (30.0, 12.0)}


def test_late_shape_tells_the_scopes_apart():
    """Set C stores after A's loads began to wait: fifo ignores C's bytes, link waits for them too."""
    platform = resolve_platform("h200-pcie-host")
    alone = Shape(66, 16 * KIB, base_us=10.0)
    late = Shape(66, 16 * KIB, base_us=10.0, late_ctas=66, late_bytes=64 * KIB, late_delay_us=2.0)
    nothing = Shape(66, 16 * KIB, base_us=10.0, late_ctas=66, late_delay_us=2.0)
    wait = {s: {n: float(np.median(predict(sh, platform, LoadGate(300e3, s), _engine()).storer_gate_wait_us))
                for n, sh in (("alone", alone), ("late", late), ("nothing", nothing))} for s in ("link", "fifo")}
    r = platform.drain_rate_gbps * 1e3    # bytes per us
    assert wait["fifo"]["late"] == pytest.approx(wait["fifo"]["alone"], abs=1e-6) == wait["link"]["alone"]
    assert wait["link"]["nothing"] == wait["link"]["alone"]
    assert wait["link"]["late"] - wait["link"]["alone"] == pytest.approx(66 * 64 * KIB / r, rel=0.02)


def test_fit_recovers_a_known_producer_gate():
    """Records made by the DES with a producer-scope gate of 8 KiB: the fit finds that scope and threshold."""
    platform = resolve_platform("h200-pcie-host")
    truth = LoadGate(8 * KIB, "producer")
    lines = []
    for k in (*FIT_CTAS, 66):
        lines.append(_record("main", k, 0, 256 * KIB, 10.0))
        for b in (16, 32, 64):
            pr = predict(Shape(k, b * KIB, base_us=10.0), platform, truth, _engine())
            lines.append(_record("main", k, b * KIB, 256 * KIB, float(np.median(pr.storer_load_us))))
    rs = parse_texts([("syn.jsonl", "\n".join(json.dumps(r) for r in lines).encode())])
    fit = fit_gate(rs, platform, _engine())
    assert fit.gate.scope == "producer"
    assert fit.gate.threshold_bytes == pytest.approx(8 * KIB, rel=0.05)
    assert fit.errors["heldout-main"]["median_mape"] < 1.0      # K = 66, never fitted


def test_points_need_the_b0_reference():
    rs = parse_texts([("x.jsonl", json.dumps(_record("main", 16, 32 * KIB, 256 * KIB, 12.0)).encode())])
    with pytest.raises(RecordError, match="no B = 0 main point"):
        points(rs)


def test_shipped_fit_is_link_scope():
    """The measured law: the whole link's backlog, not the CTA's own bytes (docs/host-link.md)."""
    profile = resolve_platform("h200-pcie-host")
    assert profile.load_gate == LoadGate(328900.0, "link")   # 329.5 kB before the power-law Q(K) (tails)
    gate = profile.provenance["load_gate"]
    scopes = gate["scopes"]
    assert set(scopes) == {"producer", "link", "fifo"}
    assert scopes["link"]["rms_rel_error"] < 0.1 < 0.2 < min(scopes["producer"]["rms_rel_error"],
                                                              scopes["fifo"]["rms_rel_error"])
    errors = gate["errors_percent"]
    assert errors["heldout-main"]["median_mape"] < 5 and errors["heldout-gap-gated"]["median_mape"] < 8
    by_scope = gate["errors_percent_by_scope"]     # the late points: the occupancy reading, not the FIFO one
    assert by_scope["link"]["heldout-late"]["median_mape"] < 15 < 50 < by_scope["fifo"]["heldout-late"]["median_mape"]
    assert resolve_platform("h200-nvlink-x2").load_gate is None


def test_calibrate_loadgate_options(tmp_path, capsys):
    micro = RECORDS / "h200-pcie-host-micro.jsonl"
    out = tmp_path / "p.json"
    assert main(["calibrate", str(micro), "-o", str(out), "--no-loadgate", "--no-des"]) == 0
    assert "load_gate" not in json.loads(out.read_text())
    capsys.readouterr()
    assert main(["calibrate", str(micro), "-o", str(out), "--loadgate", str(tmp_path / "none.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "do not exist" in err and err.count("\n") == 1
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({**_record("main", 1, 0, 65536, 4.0), "platform": {**PLATFORM, "driver": "1"}}) + "\n")
    assert main(["calibrate", str(micro), "-o", str(out), "--loadgate", str(other)]) == 2
    assert "another platform: driver" in capsys.readouterr().err


def _late_record(burst, late_bytes, delay_us, load_us):
    extra = {"late_ctas": 66, "late_bytes": late_bytes, "late_delay_us": delay_us, "late_bursts": 1, "late_spin_us": 0.0}
    rec = _record("late", 132, burst, 256 * KIB, load_us, storers=66)
    return {**rec, "params": {**rec["params"], **extra}, "commit": "late"}   # a run of its own (not "rerun")


def test_stall_fit_recovers_a_known_stall_gate():
    """Records made by the DES with a link-scope stall gate of 300 kB, where set C stores while set A's
    loads run (D = 20 us, after A's wait): the stall fit finds that gate; the start gate cannot
    explain those points (it never holds a load that has started)."""
    platform = resolve_platform("h200-pcie-host")
    truth = LoadGate(300e3, "link", "stall")
    lines = [_record("main", k, 0, 256 * KIB, 10.0) for k in FIT_CTAS] + [_late_record(0, 0, 0.0, 30.0)]
    for k in FIT_CTAS:
        for b in (16, 64):
            pr = predict(Shape(k, b * KIB, base_us=10.0), platform, truth, "fast")
            lines.append(_record("main", k, b * KIB, 256 * KIB, float(np.median(pr.storer_load_us))))
    for late in (16, 64):
        shape = Shape(66, 8 * KIB, base_us=30.0, late_ctas=66, late_bytes=late * KIB, late_delay_us=20.0)
        lines.append(_late_record(8 * KIB, late * KIB, 20.0, float(np.median(predict(shape, platform, truth,
                                                                                        "fast").storer_load_us))))
    rs = parse_texts([("syn.jsonl", "\n".join(json.dumps(r) for r in lines).encode())])
    fit = fit_gate(rs, platform, "fast", mode="stall")
    assert fit.gate.scope == "link" and fit.gate.mode == "stall"
    assert fit.gate.threshold_bytes == pytest.approx(300e3, rel=0.02)
    assert fit.errors["fit-late"]["median_mape"] < 0.5
    start = fit_gate(rs, platform, "fast")
    assert start.gate.mode == "start" and start.errors["fit-late"]["median_mape"] > 5.0
