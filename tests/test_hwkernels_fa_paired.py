"""Paired timing (hwkernels.fa_paired) with fake runs, no GPU: the rotating order, the per-trial
differences cancelling a drift that the separate medians keep, a failed check dropping its
entry, the record params, and the A/B runner's one-line errors."""

import pytest

from hwkernels import fa_paired


def test_order_rotates_by_one_per_trial():
    names = ["a", "b", "c"]
    assert [fa_paired.rotations(names, t) for t in range(4)] == [
        ["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]


def _clocked(log, extra_us, drift_us=50.0):
    """Runs whose kernel_us is a shared clock (drift_us per call, any entry) plus extra_us."""
    def make(name, extra):
        def run():
            log.append(name)
            return {"kernel_us": 1000.0 + drift_us * len(log) + extra}
        return run
    return {n: (make(n, e), {}) for n, e in extra_us.items()}


def test_paired_difference_cancels_a_drift_the_medians_keep():
    log = []
    entries = _clocked(log, {"fa-only": 0.0, "fused-paced": 20.0, "fused": 100.0})
    ms = fa_paired.measure_entries(entries, repeats=6, warmup=1)
    assert len(log) == 3 * 7 and log[:3] == ["fa-only", "fused-paced", "fused"]
    assert log[3:6] == ["fused-paced", "fused", "fa-only"]
    assert all(len(m.raw) == 6 for m in ms.values())
    base = ms["fa-only"]
    p = fa_paired.paired_params(ms["fused-paced"], base, False)
    # each trial's difference is 20 us plus the drift between the two calls of that trial,
    # (+1, -2, +1, ...) x 50 us over the rotation, so its median is near 20 + 50 (not exact)
    diffs = [r["kernel_us"] - b["kernel_us"] for r, b in zip(ms["fused-paced"].raw, base.raw)]
    assert p["paired_diff_us"] == pytest.approx(sorted(diffs)[2] / 2 + sorted(diffs)[3] / 2)
    assert p["paired_order"] == "rotate" and p["paired_trials"] == 6 and p["paired_base"] == "fa-only"
    assert p["paired_diff_p10_us"] <= p["paired_diff_us"] <= p["paired_diff_p90_us"]
    assert fa_paired.paired_params(base, base, True) == {"paired_order": "rotate", "paired_trials": 6}


def test_paired_difference_without_drift_is_exact():
    log = []
    ms = fa_paired.measure_entries(_clocked(log, {"fa-only": 0.0, "v": 37.5}, drift_us=0.0), 5)
    p = fa_paired.paired_params(ms["v"], ms["fa-only"], False)
    assert p["paired_diff_us"] == pytest.approx(37.5) and p["paired_diff_p90_us"] == pytest.approx(37.5)
    assert ms["v"].stats["kernel_us"].median == pytest.approx(1037.5)


def test_a_failed_check_or_an_exception_drops_the_entry():
    log = []
    entries = _clocked(log, {"fa-only": 0.0, "bad": 1.0, "boom": 2.0})
    entries["bad"] = (entries["bad"][0], {"check": lambda r: (len(log) < 5, 0.5)})

    def boom():
        raise RuntimeError("no kernel")
    entries["boom"] = (boom, {})
    ms = fa_paired.measure_entries(entries, repeats=3)
    assert ms["fa-only"].ok and len(ms["fa-only"].raw) == 3
    assert not ms["bad"].ok and ms["bad"].stats is None and ms["bad"].max_abs_err == 0.5
    assert isinstance(ms["boom"], RuntimeError)
    assert log.count("bad") == 3 and log[-1] == "fa-only"   # its 3rd run failed, no 4th
    assert "paired_diff_us" not in fa_paired.paired_params(ms["bad"], ms["fa-only"], False)


def test_measure_named_passes_preparation_errors_through():
    log = []
    prep = {n: (run, 7, True, kw) for n, (run, kw) in _clocked(log, {"fa-only": 0, "x": 3}).items()}
    prep["y"] = ValueError("cannot capture")
    out = fa_paired.measure_named(prep, 2)
    assert isinstance(out["y"], ValueError)
    m, replays, graphed, pp = out["x"]
    assert m.ok and replays == 7 and graphed and "paired_diff_us" in pp
    assert "paired_diff_us" not in out["fa-only"][3]


@pytest.mark.parametrize("argv,message", [
    (["--entries", "fa-only,fused:zz"], "entry 'fused:zz'"),
    (["--entries", "nope"], "entry 'nope'"),
    (["--seq-lens", "6k"], "invalid literal")])
def test_ab_runner_bad_arguments_exit_2(argv, message, capsys):
    assert fa_paired.main(["--json", "/nonexistent/x.json", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
