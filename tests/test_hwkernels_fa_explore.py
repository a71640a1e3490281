"""The exploration runner's pure parts: the paced pick and the summary lines (no GPU)."""

from hwkernels.fa_explore import FA_CONFIGS, PACED, pick, summary


def _row(name, m, t, ok=True, section="pace"):
    return {"section": section, "M": m, "name": name, "ok": ok, "kernel_us": t}


def test_pick_takes_the_fastest_entry_that_passed_at_every_m(tmp_path):
    rows = [_row("p16", 1, 5.0), _row("p16", 2, 5.0), _row("p16m", 1, 4.0), _row("p16m", 2, 0.0, ok=False),
            _row("p8", 1, 5.5), _row("p8", 2, 4.0), _row("fa-only", 1, 1.0)]
    out = tmp_path / "args.txt"
    assert pick(rows, out) == "--pace 8 --pace-order remote-first"     # 9.5 < 10.0; p16m failed at M = 2
    assert out.read_text() == "--pace 8 --pace-order remote-first\n"
    assert pick([_row("p8con", 1, 1.0)], out) == "--pace 8 --pace-order remote-first --pace-consecutive"
    assert pick([_row("p8m", 1, 1.0)], out).endswith("--pace-masked")
    assert pick([_row("p8", 1, 1.0, ok=False)], out) == "" and out.read_text() == "\n"


def test_summary_names_failures_and_ratios():
    rows = [_row("cudnn", 1024, 30.0, section="fa"), _row("base", 1024, 40.0, section="fa"),
            {"section": "fa", "M": 1024, "name": "flat", "ok": False, "error": "OutOfResources: x"}]
    text = summary(rows)
    assert "cudnn/ours=0.750" in text and "OutOfResources" in text


def test_tables_are_consistent():
    assert all(len(v) == 9 for v in FA_CONFIGS.values())
    assert all(len(v) == 4 and 128 % v[0] == 0 for v in PACED.values())


def test_extra_configs_and_the_auto_var_pick():
    from hwkernels.fa_explore import FA_EXTRA, auto_var_configs, fa_config, ratio_table

    assert fa_config("base-a-e2-s") == (FA_CONFIGS["base"], {"lsum": False, "early": True, "emu": 2,
                                                          "split": True})
    assert fa_config("bm64x2") == (FA_CONFIGS["bm64x2"], {})
    assert "base" not in FA_EXTRA and len(FA_EXTRA) == 2 * 39 + 2 + 2 * 6  # + -e0, -r/-q<k>, -r0
    assert fa_config("base-r-q1") == (FA_CONFIGS["base"], {"lsum": False, "early": False, "emu": 1,
                                                        "split": False, "qpf": 1, "qreg": True})
    rows = [_row(n, m, t, section="fa") for m in (1, 2) for n, t in
            (("cudnn", 8.0), ("base", 10.0), ("base-e1", 9.0), ("base-a-e2", 9.5 + (m == 2) * 2),
             ("base-e2-s", 1.0), ("bm64x2-e1", 1.0), ("base-e3", 8.5 if m == 1 else 0.0))]
    rows[-1]["ok"] = False                       # base-e3 failed at M = 2: not picked
    assert auto_var_configs(rows) == ["base", "base-e1", "base-a-e2"]
    table = ratio_table(rows).splitlines()
    assert table[0].split() == ["config", "1", "2", "min"]
    assert table[2].split() == ["base-e1", "0.889", "0.889", "0.889"]
