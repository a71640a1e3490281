"""The GEMM exploration's bookkeeping (pure python; its measurements need the GPU)."""

import math

from hwkernels import moe_gemm_explore as ex
from hwkernels import moe_gemm_sections as more


def _row(variant, ratio, ok=True, section="gemm", blocks=(128, 128, 128), m=1024):
    return {"section": section, "precision": "fp8", "hidden": 2048, "intermediate": 768,
            "m": m, "path": "l1", "variant": variant, "blocks": list(blocks), "n": 1536,
            "k": 2048, "ok": ok, "ratio": ratio}


def test_summary_is_min_and_geomean_over_checked_points():
    rows = [_row("base", 0.5), _row("base", 0.8, m=4096), _row("poll", 0.6),
            _row("poll", None, ok=False, m=4096), _row("poll", 0.9, section="blocks",
                                                        blocks=(64, 128, 128)),
            {"section": "fused", "variant": "base"}]
    s = ex.summary(rows)
    assert s[("gemm", "fp8", "base")] == {"n": 2, "n_ok": 2, "min": 0.5,
                                          "geomean": math.sqrt(0.5 * 0.8)}
    assert s[("gemm", "fp8", "poll")]["n"] == 2 and s[("gemm", "fp8", "poll")]["n_ok"] == 1
    assert s[("blocks", "fp8", "poll@64x128x128")]["min"] == 0.9
    assert len(s) == 3


def test_variants_keep_the_shipped_settings_as_base():
    v = ex._variants()
    for prec in ("bf16", "fp8"):
        base = v[prec]["base"]
        assert base == ex.BASE[prec] and base.poll == 0 and not base.host_desc
        assert all(c.poll == 1 for n, c in v[prec].items() if n != "base")
        assert set(ex.FUSED_VARIANTS[prec]) <= set(v[prec])
    assert ex.BASE["fp8"].acc_k1 == ex.BASE["fp8"].acc_k2 == -1
    assert ex._rotated(["a", "b", "c"], 4) == ["b", "c", "a"]
    assert all(name in v[prec] for prec, *_, name, _ in ex.BLOCKS)


def test_tables_print_every_variant(capsys):
    ex.print_tables([_row("base", 0.5), _row("bk2_256", 0.6), _row("acc2_0_hd", None, ok=False),
                     {"section": "fused", "config": "c", "variant": "base",
                      "schedule": "wave", "ok": True, "err_over_tol": 0.5, "kernel_us": 9.0}])
    out = capsys.readouterr().out
    assert "l1 m1024 n1536 k2048" in out and "FAIL" in out and "0.600" in out
    assert "0.500" in out and "9.0" in out


def test_bad_section_is_one_line_and_exit_2(capsys, tmp_path):
    assert ex.main(["--json", str(tmp_path / "x.json"), "--sections", "nope"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_every_section_runs_its_own_function(monkeypatch):
    calls = []
    for mod, name in ((ex, "gemm_section"), (ex, "fused_section"), (ex, "blocks_section"),
                      (more, "cta_section"), (more, "cta_fused_section"),
                      (more, "batched_section")):
        monkeypatch.setattr(mod, name, lambda *a, _n=name: calls.append((_n, a[1:2])))
    for sec in ex.SECTIONS:
        ex.section_fn(sec)("x", ["configs"], None)
    prec = lambda s: (s.split("-")[1],)  # noqa: E731
    assert calls == [("gemm_section", prec("gemm-fp8")), ("gemm_section", prec("gemm-bf16")),
                     ("fused_section", ()), ("blocks_section", ()),
                     ("cta_section", ("fp8",)), ("cta_section", ("bf16",)),
                     ("batched_section", ("fp8",)), ("batched_section", ("bf16",)),
                     ("cta_fused_section", ())]
