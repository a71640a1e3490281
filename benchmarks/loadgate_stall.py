"""The load gate fitted once in each mode, start (shipped) and stall, on the same loadgate records.

``calibration.loadgate.fit_gate`` in mode "start" (what ``xsim calibrate`` ships) and in mode
"stall" (a running load phase is paused while the occupancy is above the threshold), each on
calibration/records/h200-pcie-host-loadgate.jsonl against the h200-pcie-host profile's X-Stage;
then every group's median MAPE, and the trickle sweep (its own records, never fitted) as one more
held-out group with each mode's fitted gate.

    PYTHONPATH=. python benchmarks/loadgate_stall.py
writes benchmarks/results/loadgate_stall.txt and .json (atomically).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provenance import commit_note  # noqa: E402  benchmarks/ is the script's folder

from calibration.loadgate import errors, fit_gate, points  # noqa: E402
from calibration.records import load_records  # noqa: E402
from xsim.platform import resolve_platform  # noqa: E402
from xsim.simulate_point import default_engine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ROOT / "calibration" / "records"
OUT = ROOT / "benchmarks" / "results" / "loadgate_stall"
MODES = ("start", "stall")


def main() -> int:
    platform = resolve_platform("h200-pcie-host")
    engine = default_engine(platform)
    fit_rs = load_records([str(RECORDS / "h200-pcie-host-loadgate.jsonl")])
    trickle = points(load_records([str(RECORDS / "h200-pcie-host-loadgate-trickle.jsonl")]))
    doc = {"where": commit_note(), "engine": engine, "modes": {}}
    for mode in MODES:
        fit = fit_gate(fit_rs, platform, engine, mode)
        groups = {g: e for g, e in fit.errors.items() if g != "points"}
        groups["heldout-trickle"] = {k: v for k, v in errors(trickle, platform, fit.gate, engine)["loaders"].items()}
        doc["modes"][mode] = {"gate": fit.gate.to_dict(), "n_fit": fit.n_fit, "groups": groups,
                              "scopes": {s.scope: [s.threshold_bytes, s.rms_rel_error] for s in fit.scopes}}
    text = _table(doc)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    for suffix, body in ((".txt", text), (".json", json.dumps(doc, indent=1) + "\n")):
        fd, tmp = tempfile.mkstemp(dir=OUT.parent, prefix=".loadgate_stall.")
        with os.fdopen(fd, "w") as f:
            f.write(body)
        os.replace(tmp, OUT.with_suffix(suffix))
    print(text, end="")
    return 0


def _table(doc: dict) -> str:
    m = doc["modes"]
    lines = [f"load gate fitted once per mode on h200-pcie-host-loadgate.jsonl ({doc['where']}, {doc['engine']} engine)"]
    for mode in MODES:
        scopes = ", ".join(f"{s} {t / 1e3:.1f} kB RMS {100 * e:.2f} %" for s, (t, e) in m[mode]["scopes"].items())
        lines.append(f"{mode:5s}: chosen {m[mode]['gate']}; per scope: {scopes} ({m[mode]['n_fit']} fit points)")
    lines.append(f"{'group':28s} {'n':>3s} {'start med':>9s} {'stall med':>9s} {'start p90':>9s} {'stall p90':>9s}")
    for g in sorted(m["start"]["groups"]):
        a, b = m["start"]["groups"][g], m["stall"]["groups"].get(g)
        lines.append(f"{g:28s} {a['n']:3d} {a['median_mape']:8.1f}% {b['median_mape']:8.1f}% "
                     f"{a['p90_mape']:8.1f}% {b['p90_mape']:8.1f}%")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
