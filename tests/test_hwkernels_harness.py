"""The shared measurement loop: poison before, check after every launch; no time for a wrong result."""

import numpy as np
import pytest

from hwkernels import harness


class Fake:
    """A 'kernel' writing into a list, with a switch that makes launch `bad` write garbage."""

    def __init__(self, bad=None):
        self.buf, self.calls, self.log, self.bad = [None], 0, [], bad

    def poison(self):
        self.log.append("poison")
        self.buf[0] = "poison"

    def run(self):
        self.log.append("run")
        self.buf[0] = "garbage" if self.calls == self.bad else "data"
        self.calls += 1
        return {"kernel_us": 10.0 + self.calls, "span_us": np.array([1.0, 2.0]), "_raw": self.calls}

    def check(self, result):
        self.log.append("check")
        return (self.buf[0] == "data", 0.0 if self.buf[0] == "data" else 7.0)


def test_every_launch_is_poisoned_and_checked_and_warmup_is_not_kept():
    f = Fake()
    m = harness.measure(f.run, repeats=3, warmup=2, poison=f.poison, check=f.check)
    assert f.log == ["poison", "run", "check"] * 5
    assert m.ok and m.max_abs_err == 0.0
    assert list(m.samples["kernel_us"]) == [13.0, 14.0, 15.0]          # launches 3..5 kept
    assert m.stats["kernel_us"].median == 14.0 and m.stats["span_us"].n == 6
    assert [r["_raw"] for r in m.raw] == [3, 4, 5] and "_raw" not in m.stats
    assert m.check_dict() == {"ok": True, "max_abs_err": 0.0}


@pytest.mark.parametrize("bad", [0, 3])     # a bad warm-up launch, a bad timed launch
def test_a_failed_check_keeps_no_time(bad):
    f = Fake(bad=bad)
    m = harness.measure(f.run, repeats=5, warmup=1, poison=f.poison, check=f.check)
    assert not m.ok and m.stats is None and m.samples == {} and m.stats_dicts() is None
    assert m.max_abs_err == 7.0 and f.calls == bad + 1                 # stopped at the bad launch
    assert m.check_dict() == {"ok": False, "max_abs_err": 7.0}


def test_ranks_agree_and_sync_brackets_each_launch():
    f, events = Fake(), []
    verdicts = iter([(True, 0.0), (False, 3.0)])      # another rank fails the second launch

    def agree(ok, err):
        other_ok, other_err = next(verdicts)
        return ok and other_ok, max(err, other_err)

    m = harness.measure(f.run, repeats=1, warmup=1, poison=f.poison, check=f.check,
                        sync=lambda: events.append(f.log[-1]), agree=agree)
    assert not m.ok and m.max_abs_err == 3.0
    assert events == ["poison", "run", "poison", "run"]   # a barrier before and after every launch


def test_a_rank_that_measures_nothing_returns_none():
    m = harness.measure(lambda: None, repeats=2, warmup=0)
    assert m.ok and m.stats == {} and m.raw == []


def test_bad_arguments():
    with pytest.raises(ValueError, match="repeats"):
        harness.measure(lambda: None, repeats=0)
