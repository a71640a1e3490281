"""The SASS reading of hwkernels.fa_sass: synthetic listings, then the real kernel compiled for
sm_90 on the CPU (no GPU): the shipped Q-loop alternates wgmma and softmax, the software-pipelined
one runs the softmax under P V, and neither writes a wgmma's A registers before its wait."""

import json

import pytest

from hwkernels import fa_sass
from interpreter import run_fresh

# compiled in a process of its own: an interpreter test module collected before this one sets
# TRITON_INTERPRET=1 in the suite's process, and an interpreted kernel cannot be compiled
_COMPILE = """
import json, sys
from hwkernels import fa_sass
try:
    ks = {{name: fa_sass.compile_offline(**kw) for name, kw in {variants!r}}}
except Exception as exc:  # no ptxas / no CUDA backend here
    print(json.dumps({{"skip": f"{{type(exc).__name__}}: {{exc}}"}})); sys.exit(0)
print(json.dumps({{name: {{**fa_sass.inspect_cubin(k.asm["cubin"]),
                         **({ptxas} and fa_sass._ptxas_info(k.asm["ptx"]) or {{}})}}
                  for name, k in ks.items()}}))
"""


def _compiled(variants: list, ptxas: bool = False) -> dict:
    """fa_sass.inspect_cubin (and the ptxas info) of each (name, compile_offline kwargs)."""
    got = json.loads(run_fresh(_COMPILE.format(variants=variants, ptxas=ptxas), interpret=False)[-1])
    if "skip" in got:
        pytest.skip(f"cannot compile for sm_90 here: {got['skip']}")
    return got


def _listing(lines):
    return "\n".join(f"        /*{16 * i:04x}*/  {t} ;  /* 0x0 */" for i, t in enumerate(lines))


def test_hazard_and_overlap_on_a_synthetic_listing():
    safe = _listing(["HGMMA.64x128x16.F32.BF16 R88, R152, gdesc[UR12].tnspB, R88, gsb0",
                     "MUFU.EX2 R10, R10", "FFMA R11, R12, R13, R14",
                     "WARPGROUP.DEPBAR.LE gsb0, 0x0", "MOV R152, RZ"])
    ins = fa_sass.parse(safe)
    assert [a for a, _ in ins] == [0, 16, 32, 48, 64]
    assert fa_sass.rs_hazards(ins) == 0 and fa_sass.mufu_under_pv(ins) == 1
    bad = _listing(["HGMMA.64x128x16.F32.BF16 R88, R152, gdesc[UR12].tnspB, R88, gsb0",
                    "@P2 IMAD.U32 R154, RZ, RZ, UR58", "WARPGROUP.DEPBAR.LE gsb0, 0x0"])
    assert fa_sass.rs_hazards(fa_sass.parse(bad)) == 1
    # a write reached only through the loop's back-edge counts too
    loop = _listing(["MOV R155, RZ", "HGMMA.64x128x16.F32.BF16 R88, R152, gdesc[UR1], R88",
                     "BRA 0x0", "WARPGROUP.DEPBAR.LE gsb0, 0x0"])
    assert fa_sass.rs_hazards(fa_sass.parse(loop)) == 1


@pytest.fixture(scope="module")
def compiled():
    return _compiled([("base", {}), ("swp", dict(block_m=64, block_n=64, warps=4, stages=2, swp=True))])


def test_shipped_q_loop_alternates_and_is_hazard_free(compiled):
    assert compiled["base"]["rs_wgmma"] > 0
    assert compiled["base"]["mufu_under_pv"] == 0 and compiled["base"]["rs_hazards"] == 0


def test_pipelined_q_loop_overlaps_the_softmax_and_holds_p(compiled):
    assert compiled["swp"]["mufu_under_pv"] >= 32     # every exp2 of a 64 x 64 step per thread
    assert compiled["swp"]["rs_hazards"] == 0


def test_qloop_mix_on_a_synthetic_listing():
    loop = _listing(["MOV R1, RZ", "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR16], RZ, !UPT",
                     "MUFU.EX2 R2, R2", "MUFU.EX2 R3, R3", "FMUL R4, R4, R3",
                     "F2FP.BF16.F32.PACK_AB R5, R2, R3",
                     "HGMMA.64x128x16.F32.BF16 R88, R152, gdesc[UR12].tnspB, R88, gsb0",
                     "@!P3 BRA 0x10", "EXIT"])
    assert fa_sass.qloop_mix(fa_sass.parse(loop)) == {"loop_instructions": 7, "loop_mufu": 2,
                                                      "mufu_tail": 2}
    assert fa_sass.qloop_mix(fa_sass.parse(_listing(["MUFU.EX2 R2, R2", "EXIT"]))) == {}


@pytest.fixture(scope="module")
def softmax_variants():
    return _compiled([("base", {}), ("emu2", {"emu": 2}), ("early", {"early": True}),
                      ("lsum", {"lsum": True})], ptxas=True)


def test_emulated_exp2_moves_a_quarter_of_the_mufu_work(softmax_variants):
    base, emu = softmax_variants["base"], softmax_variants["emu2"]
    assert base["loop_mufu"] == 66                      # 64 of P + 2 of alpha per thread per step
    assert emu["loop_mufu"] == 66 - 64 // 4             # 2 of every 8 of P on the FMA pipe
    assert emu["spill_bytes"] == 0 and emu["rs_hazards"] == 0


def test_rescale_first_shortens_the_tail_before_p_v(softmax_variants):
    base, early = softmax_variants["base"], softmax_variants["early"]
    assert early["mufu_tail"] < base["mufu_tail"] - 40  # 118 -> 60 here: the 64 FMUL moved up
    assert early["loop_mufu"] == base["loop_mufu"] and early["spill_bytes"] == 0


def test_row_sums_on_the_tensor_cores_drop_the_fadd_tree(softmax_variants):
    base, lsum = softmax_variants["base"], softmax_variants["lsum"]
    # 64 FADD + 4 SHFL of tl.sum(p, 1) per thread per step become 8 HMMA.16816 (480 -> 425 here)
    assert lsum["loop_instructions"] < base["loop_instructions"] - 40
    assert lsum["loop_mufu"] == base["loop_mufu"] and lsum["rs_hazards"] == 0
    assert lsum["spill_bytes"] == 0 and lsum["regs"] <= base["regs"] + 8
