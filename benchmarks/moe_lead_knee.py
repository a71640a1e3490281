"""Where Algorithm 1's lead stops starving Linear-2: DES speedup over expert waves vs lead / D_knee.

For a few one-GPU catalog configs (paired and unpaired streams) on the host-link profile,
the interleaved schedule's speedup at leads of 1, 1.5, 2, 3, 4 and 8 times eq. 16's D_knee.

    PYTHONPATH=. /work/venv/bin/python benchmarks/moe_lead_knee.py [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from provenance import commit_note  # benchmarks/ is the script's folder

from xsim.builders import moe
from xsim.moe import catalog
from xsim.moe.schedule import d_knee
from xsim.params import resolve

NAMES = ("moe1-hunyuan-large-bf16-balanced-1024", "moe1-dit-moe-bf16-zipf-4096", "moe1-hy3-bf16-hot-1024",
         "moe1-glm-5.2-fp8-balanced-1024", "moe1-qwen3.5-bf16-zipf-1024", "moe1-dsv4-flash-bf16-zipf-4096")
MULTIPLES = (1, 1.5, 2, 3, 4, 8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    platform = catalog.host_platform()
    entries = {e.name: e for e in catalog.ONE_GPU}
    lines = [f"interleaved / expert-wave DES speedup vs lead on {platform.name} ({commit_note()})",
             "scenario                                  paired  D_knee  " + "  ".join(f"{m:>4g}xD" for m in MULTIPLES)]
    for name in NAMES:
        params = resolve(moe.PARAMS, catalog.params(entries[name]), name)
        cfg = moe.Config(params, platform)
        knee = d_knee(cfg.shape, cfg.n_streams)
        paired = cfg.shape.l1_nblocks % 2 == 0 and cfg.shape.l2_nblocks % 2 == 0 and cfg.n_streams % 2 == 0
        cells = []
        for m in MULTIPLES:
            params["lead"] = float(max(1, math.ceil(m * knee - 1e-9)))
            _, s = moe.simulate(params, platform, "fast", trace=False)
            cells.append(f"{params['lead']:3.0f}:{s['speedup']:.3f}")
        lines.append(f"{name:42s} {'yes' if paired else 'no':6s} {knee:6.2f}  " + " ".join(cells))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "moe_lead_knee.txt").write_text(text)


if __name__ == "__main__":
    main()
