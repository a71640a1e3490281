"""K-split Linear-1 tiles: how a few-tile layer fills the GPU (device merge and host rule).

A Linear-1 launch with fewer tiles than SMs leaves most SMs idle (one expert of H 2048,
I 768 at m = 1024: 48 tiles for 132 SMs). With a table of split `s`, each L1 tile (m, n)
is `s` table entries (kind 0, expert, m, n * s + part): part p sums K range
[p * H / s, (p + 1) * H / s) into fp32 gate and up partials. Every part stores its
partials to a workspace slot of its own, then thread 0 adds 1 to the tile's arrival
counter with acq_rel (after a bar.sync, as the L1 release); the part that reads s - 1
is the last: it reads all s partials in part order (the sum does not depend on which
part came last), runs the SwiGLU epilogue and signals l2_full. No part waits for another,
so a split table adds no dependency and no deadlock risk to the stream order.

The device side is moe_split_kernels.split_merge (called from moe_kernels._linear1).

    s = l1_split(n_tiles, sms)     # 1, 2 or 4 (1 unless splitting cuts the waves by 1/4)
    ws, cnt = workspace(s, n_l1_tiles, block_m, block_n1, device)
"""

import math

SPLITS = (1, 2, 4)


def l1_split(n_tiles: int, sms: int, gain: float = 0.75) -> int:
    """The split in SPLITS with the fewest full-tile waves, ceil(n * s / sms) / s, if that
    is at most `gain` of the unsplit waves; else 1 (splitting costs partial traffic)."""
    if n_tiles < 1 or sms < 1:
        raise ValueError('"n_tiles" and "sms" must be >= 1.')
    waves = {s: math.ceil(n_tiles * s / sms) / s for s in SPLITS}
    best = min(SPLITS, key=lambda s: (waves[s], s))
    return best if waves[best] <= gain * waves[1] else 1


def workspace(split: int, n_l1_tiles: int, block_m: int, block_n1: int, device):
    """(fp32 partials, int32 arrival counters) for a split table (1-element dummies at 1)."""
    import torch

    if split == 1:
        return (torch.zeros(1, dtype=torch.float32, device=device),
                torch.zeros(1, dtype=torch.int32, device=device))
    n = max(n_l1_tiles, 1)
    return (torch.empty(n * split * 2 * block_m * block_n1, dtype=torch.float32, device=device),
            torch.zeros(n, dtype=torch.int32, device=device))
