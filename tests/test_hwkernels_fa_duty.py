"""hwkernels.fa_duty on CPU: the duty ring's launches per slot, the variant that checks it, its options."""

import pytest

from hwkernels import fa_duty   # imports no Triton kernel: the interpreter tests set the interpreter later


class FakeCase:
    slots = 3

    def __init__(self):
        self.calls = []

    def enqueue(self, variant, slot=0):
        self.calls.append((variant, slot))

    def store_out(self, slot):
        self.calls.append(("store-out", slot))


def test_store_gap_runs_fa_then_the_out_stores_and_is_checked_as_serial():
    case = FakeCase()
    ring, checked = fa_duty.duty_ring(case, "store", 2, 1000)
    ring()
    assert checked == "serial"
    assert case.calls == [c for s in range(3) for c in (("fa-only", s), ("store-out", s), ("store-out", s))]


def test_no_gap_and_idle_gap_are_checked_as_fa_only(monkeypatch):
    spun = []
    monkeypatch.setattr(fa_duty, "spin", spun.append)
    case = FakeCase()
    ring, checked = fa_duty.duty_ring(case, "idle", 4, 1500)
    ring()
    assert checked == "fa-only" and spun == [6000] * 3
    assert case.calls == [("fa-only", s) for s in range(3)]
    case = FakeCase()
    ring, checked = fa_duty.duty_ring(case, "store", 0, 1500)
    ring()
    assert checked == "fa-only" and case.calls == [("fa-only", s) for s in range(3)]


def test_unknown_gap_kind_is_refused():
    with pytest.raises(ValueError, match="gap_kind"):
        fa_duty.duty_ring(FakeCase(), "nap", 1, 1)


def test_options(capsys):
    own, args = fa_duty.parse_args(["--out", "x.jsonl", "--gaps", "4,0,2,2", "--gap-kinds", "idle"])
    assert own.gaps == [0, 2, 4] and own.gap_kinds == ["idle"] and args.seq_lens == "2048,8192,32768"
    for bad in (["--gap-kinds", "nap"], ["--gaps", "1,x"], ["--gaps", "-1"], ["--run-s", "0"]):
        with pytest.raises(SystemExit) as exc:
            fa_duty.parse_args(["--out", "x.jsonl", *bad])
        assert exc.value.code == 2
    assert "fa_duty" in capsys.readouterr().err
