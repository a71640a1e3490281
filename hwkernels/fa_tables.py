"""fa_bench's printed tables: one line per M (every variant's median, E_res, H, speedup, FA over
cuDNN, fused-paced) and the per-tile table (Q-loop and store-span medians), from the run's rows
or from a records file (`fa_bench --table-from`)."""

import math


def table(rows: list[dict]) -> str:
    """The short summary: one line per M (times in microseconds, medians)."""
    head = ("M", "T_FA", "T_A2A", "T_A2A_ce", "T_serial", "T_fused", "T_cc_asm", "T_cc_atom",
            "E_res", "H", "speedup", "FA/cuDNN", "T_paced", "E_paced", "H_paced")
    lines = ["  ".join(f"{h:>9}" for h in head)]
    for r in rows:
        t = r["t"]
        fa_us, ser, fus = t.get("fa-only"), t.get("serial"), t.get("fused")
        e_res = fus - fa_us if fa_us and fus else math.nan
        hide = 1 - e_res / (ser - fa_us) if fa_us and ser and fus and ser > fa_us else math.nan
        vals = [r["M"], fa_us, t.get("a2a-store"), t.get("a2a-ce"), ser, fus, t.get("cc-asm"),
                t.get("cc-atomic"), e_res, hide, ser / fus if ser and fus else math.nan,
                t["sdpa-cudnn"] / fa_us if fa_us and t.get("sdpa-cudnn") else math.nan]
        pac = t.get("fused-paced")
        e_pac = pac - fa_us if fa_us and pac else math.nan
        vals += [pac, e_pac, 1 - e_pac / (ser - fa_us) if pac and fa_us and ser and ser > fa_us
                 else math.nan]
        lines.append("  ".join(f"{v:>9.1f}" if isinstance(v, float) and (i < 9 or i > 11) else
                               (f"{v:>9.3f}" if isinstance(v, float) else f"{v!s:>9}")
                               for i, v in enumerate(v if v is not None else math.nan
                                                     for v in vals)))
    return "\n".join(lines)


def rows_from_records(path) -> tuple[list[dict], list[tuple]]:
    """(summary rows, per-tile rows) from a records file, for `table` and `tile_table`."""
    import json

    by_m: dict = {}
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("experiment") != "fa-a2a" or not r["check"]["ok"]:
            continue
        p = r["params"]
        by_m.setdefault(p["seq_len"], {})[p.get("variant", r["kind"])] = r["stats"]
    rows = [{"M": m, "t": {v: st["kernel_us"]["median"] for v, st in d.items()}}
            for m, d in sorted(by_m.items())]

    def q(d, v, k, key="median"):
        return d.get(v, {}).get(k, {}).get(key, math.nan)
    tiles = [(m, q(d, "fa-only", "qloop_us"), q(d, "fused", "qloop_us"), q(d, "cc-asm", "qloop_us"),
              q(d, "fa-only", "issue_span_us"), q(d, "fused", "issue_span_us"),
              q(d, "fused", "issue_span_us", "p90"), q(d, "fused", "issue_span_us", "max"),
              q(d, "cc-asm", "issue_span_us"), q(d, "cc-atomic", "issue_span_us"),
              q(d, "fused", "qloop_us", "p90"), q(d, "fused-paced", "qloop_us"),
              q(d, "fused-paced", "qloop_us", "p90"), q(d, "fused-paced", "issue_span_us"))
             for m, d in sorted(by_m.items())]
    return rows, tiles


def tile_table(tiles: list[tuple]) -> str:
    head = ("M", "qloop_FA", "qloop_fus", "qloop_cc", "span_FA", "span_fus", "fus_p90",
            "fus_max", "span_ccA", "span_ccR", "qfus_p90", "qloop_pac", "qpac_p90", "span_pac")
    lines = ["  ".join(f"{h:>9}" for h in head)]
    lines += ["  ".join(f"{v:>9}" if i == 0 else f"{v:>9.2f}" for i, v in enumerate(t)) for t in tiles]
    return "\n".join(lines)
