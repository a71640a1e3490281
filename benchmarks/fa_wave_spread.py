"""Which Q-loop spread aligns the DES's attention waves: the launch's, or the wave's? And E_res at one clock.

The fa-a2a report's DES draws each tile's Q-loop with ``qloop_cv``, the spread over every tile of
the FA-only records (p10-p90 over all trials' tiles: the drift of the SM clock over a launch and
between launches included). What keeps the tile-boundary stores of the 132 programs apart is only
the spread between the programs of one wave; ``hwkernels/fa_waves.py`` measured it (run at
``55b6251``, ``calibration/records/logs/h200-pcie-host-fa-a2a/waves-55b6251/``: FA-only, fused and
fused-paced at M = 4K..64K, 3 stamped ring launches each, every slot checked).

Per M of the headline (Gluon) series of the shipped records (run 10 since ``bb18218``, whose records
carry the within-wave spread too: the report's ``at_clock`` ``des-wave`` keys use those), this prints: the measured
E_res (T_fused - T_FA, each at its own clock), E_res at one clock (T_fused - T_FA f_FA / f_fused,
the timed runs' clocks: Point.fa_at_clock_of), and the DES's E_res with the report's launch-wide
spread and with FA-only's within-wave spread at that M (and the same three for fused-paced) (the median of its launches; the nearest
measured M elsewhere). The DES has no DVFS: it predicts at FA-only's clock (its Q-loop fit is
FA-only's), so its residual is to be read against the one-clock column. Nothing is fitted.

    PYTHONPATH=. python benchmarks/fa_wave_spread.py    # writes benchmarks/results/fa_wave_spread.txt
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from calibration.records import load_shipped_records  # noqa: E402
from xsim.fileio import atomic_write  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402
from xsim.report import fa_a2a  # noqa: E402
from xsim.spread import P10_P90_SIGMAS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WAVES = ROOT / "calibration" / "records" / "logs" / "h200-pcie-host-fa-a2a" / "waves-55b6251" / "fa-waves.jsonl"
OUT = ROOT / "benchmarks" / "results" / "fa_wave_spread.txt"
ENGINE = "fast"


def wave_cvs(path: Path = WAVES, variant: str = "fa-only") -> dict[int, float]:
    """M -> the median over the variant's launches of its within-wave cv ((p90 - p10) / (2.563 mean))."""
    by_m: dict[int, list[float]] = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r["variant"] == variant and r["ok"]:
            by_m.setdefault(r["seq_len"], []).append(
                (r["wave_p90_over_mean"] - r["wave_p10_over_mean"]) / P10_P90_SIGMAS)
    return {m: float(np.median(v)) for m, v in sorted(by_m.items())}


def nearest(cvs: dict[int, float], m: int) -> tuple[float, int]:
    at = min(cvs, key=lambda k: (abs(math.log(k / m)), k))
    return cvs[at], at


def rows(platform) -> tuple[list[tuple], dict]:
    rep = fa_a2a.build(load_shipped_records("fa-a2a", platform.name), platform, engine=ENGINE)
    head = fa_a2a._headline(rep.series)
    cvs = wave_cvs()
    out = []
    for p in head.points:
        cv, at = nearest(cvs, p.seq_len)
        q = dataclasses.replace(head.qloop, cv=cv)
        wave = fa_a2a._des_residuals(p, q, platform, head.key["destination"], ENGINE)
        out.append((p.seq_len, p.e_res_us, p.get("fused") - p.fa_at_clock_of("fused"),
                    p.predicted["des"]["e_res_us"], wave["fused"], cv, at, p.clock("fa-only"),
                    p.clock("fused"), p.get("fa-only"), p.get("fused"),
                    p.get("fused-paced") - p.fa_at_clock_of("fused-paced"),
                    p.predicted["des"].get("paced_us", math.nan) - p.get("fa-only"),
                    wave.get("fused-paced", math.nan)))
    return out, {"key": head.key, "launch_cv": head.qloop.cv}


def table(rs: list[tuple], meta: dict) -> str:
    lines = [f"series {meta['key']}; the report's launch-wide qloop_cv {meta['launch_cv']:.4f}",
             "| M | E_res measured | E_res at one clock | DES, launch cv | DES, wave cv | wave cv (at M) "
             "| MHz FA / fused | fused at FA's clock | DES fused, wave cv | error |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]
    errs, mae_launch, mae_wave, raw_launch = [], [], [], []
    for m, e, e1, d_l, d_w, cv, at, f_fa, f_fu, t_fa, t_fu, *_ in rs:
        at_fa = t_fu * f_fu / f_fa                      # fused at FA-only's clock
        pred = t_fa + d_w
        err = 100 * (pred - at_fa) / at_fa
        errs.append(abs(err))
        mae_launch.append(abs(d_l - e1))
        mae_wave.append(abs(d_w - e1))
        raw_launch.append(abs(100 * d_l / t_fu + 100 * (t_fa - t_fu) / t_fu))
        lines.append(f"| {m} | {e:.1f} | {e1:.1f} | {d_l:.1f} | {d_w:.1f} | {cv:.4f} ({at}) | "
                     f"{f_fa:.0f} / {f_fu:.0f} | {at_fa:.1f} | {pred:.1f} | {err:+.1f} % |")
    lines += ["",
              f"E_res at one clock vs the DES: mean absolute error {np.mean(mae_launch):.1f} us with the "
              f"launch-wide spread, {np.mean(mae_wave):.1f} us with the within-wave spread",
              f"fused time at FA-only's clock vs the DES with the within-wave spread: MAPE {np.mean(errs):.2f} % "
              f"(worst {max(errs):.1f} %); the report's raw fused_time_mape (launch spread, each at its own "
              f"clock): {np.mean(raw_launch):.2f} %", "",
              "fused-paced (E_res_paced, us): | M | at one clock | DES, launch cv | DES, wave cv |",
              "| ---: | ---: | ---: | ---: |"]
    lines += [f"| {r[0]} | {r[11]:.1f} | {r[12]:.1f} | {r[13]:.1f} |" for r in rs]
    return "\n".join(lines)


def main(argv=None) -> int:
    platform = resolve_platform("h200-pcie-host")
    rs, meta = rows(platform)
    text = (f"# benchmarks/fa_wave_spread.py on {platform.name}, {commit_note()}; DES engine {ENGINE}\n\n"
            + table(rs, meta) + "\n")
    atomic_write(OUT, text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
