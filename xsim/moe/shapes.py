"""One expert-parallel MoE layer's shape and tiling (the tile-table contract's ``MoEShape``)."""

from __future__ import annotations

from dataclasses import dataclass

PRECISIONS = ("bf16", "fp8")
ELEMENT_BYTES = {"bf16": 2, "fp8": 1}   # weights and activations; fp8 = e4m3 (W8A8)
COMBINE_ELEMENT_BYTES = 2               # Combine stores are bf16 in both precisions


@dataclass(frozen=True)
class MoEShape:
    """An MoE layer on ``ep`` ranks.

    ``tokens`` is the number of tokens on each rank (DeepGEMM's ``num_tokens``); each rank holds
    ``experts // ep`` local experts. Linear-1 tiles ``block_n1`` intermediate columns (gate and
    up for those columns, SwiGLU fused: 2 * block_n1 weight columns); Linear-2 tiles
    ``block_n2`` hidden columns of the output.
    """

    hidden: int
    intermediate: int
    experts: int
    topk: int
    tokens: int
    ep: int = 1
    precision: str = "bf16"
    block_m: int = 128
    block_n1: int = 128
    block_n2: int = 128

    def __post_init__(self) -> None:
        for name in ("hidden", "intermediate", "experts", "topk", "tokens", "ep",
                     "block_m", "block_n1", "block_n2"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f'"{name}" must be a whole number > 0, got {value!r}')
        if self.precision not in PRECISIONS:
            raise ValueError(f'"precision" must be one of {", ".join(PRECISIONS)}, got {self.precision!r}')
        if self.experts % self.ep:
            raise ValueError(f'"experts" ({self.experts}) must be divisible by "ep" ({self.ep})')
        if self.topk > self.experts:
            raise ValueError(f'"topk" ({self.topk}) must be <= "experts" ({self.experts})')
        if self.intermediate % self.block_n1:
            raise ValueError(f'"block_n1" ({self.block_n1}) must divide "intermediate" ({self.intermediate})')
        if self.hidden % self.block_n2:
            raise ValueError(f'"block_n2" ({self.block_n2}) must divide "hidden" ({self.hidden})')

    @property
    def experts_local(self) -> int:
        return self.experts // self.ep

    @property
    def l1_nblocks(self) -> int:
        """Linear-1 tiles per m-block: an L2 tile of that m-block waits for this many."""
        return self.intermediate // self.block_n1

    @property
    def l2_nblocks(self) -> int:
        return self.hidden // self.block_n2

    @property
    def element_bytes(self) -> int:
        return ELEMENT_BYTES[self.precision]

    @property
    def expected_rows_per_expert(self) -> float:
        """Routed rows an expert receives on average: tokens * ep * topk / experts."""
        return self.tokens * self.ep * self.topk / self.experts

    def expert_weight_bytes(self) -> int:
        """One expert's weights: w1 [hidden, 2 * intermediate] and w2 [intermediate, hidden]."""
        return 3 * self.hidden * self.intermediate * self.element_bytes

    def l1_tile_weight_bytes(self) -> int:
        """Weight bytes one Linear-1 tile reads: hidden x 2 * block_n1."""
        return self.hidden * 2 * self.block_n1 * self.element_bytes

    def l2_tile_weight_bytes(self) -> int:
        """Weight bytes one Linear-2 tile reads: intermediate x block_n2."""
        return self.intermediate * self.block_n2 * self.element_bytes

    def combine_bytes(self, valid_rows: int) -> int:
        """Combine bytes one Linear-2 tile stores: valid rows x block_n2 bf16 values."""
        return valid_rows * self.block_n2 * COMBINE_ELEMENT_BYTES
