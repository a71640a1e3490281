"""Public MoE layer shapes of the paper's model families (Sec. 5.2.1), each with its source.

The paper names its seven models (DiT-MoE, Qwen3.5, Hy3, MiMo-V2.5, GLM-5.2, DSv4-Flash,
DSv4-Pro) but not their layer shapes; these are the public configurations of those models or,
where a model's config is not public, the nearest public one (said in ``source``). Shared
experts are left out: they are not routed and MegaMoE's Combine carries routed experts only.
"""

from __future__ import annotations

FAMILIES = {
    "dit-moe": dict(hidden=1408, intermediate=5632, experts=16, topk=2, source=(
        "DiT-MoE-G/2-16E2A (Fei et al. 2024, github.com/feizc/DiT-MoE models.py: DiT_G_2 hidden_size 1408, "
        "MoeMLP intermediate = mlp_ratio 4 x hidden, num_experts 16, num_experts_per_tok 2); the paper's "
        "DiT-MoE shape is not published, this is the largest public DiT-MoE")),
    "dit-moe-xl": dict(hidden=1152, intermediate=4608, experts=8, topk=2, source=(
        "DiT-MoE-XL/2-8E2A (github.com/feizc/DiT-MoE models.py: DiT_XL_2 hidden_size 1152, mlp_ratio 4, "
        "README: 8 experts, top-2)")),
    "qwen3.5": dict(hidden=4096, intermediate=1024, experts=512, topk=10, source=(
        "Qwen3.5-397B-A17B (Qwen, Feb 2026): hidden 4096, 512 experts, 10 routed + 1 shared per token, "
        "expert intermediate 1024 (apxml.com/models/qwen35-397b-a17b; roboaidigest.com 2026-02-17)")),
    "qwen3-30b": dict(hidden=2048, intermediate=768, experts=128, topk=8, source=(
        "Qwen3-30B-A3B config.json (huggingface.co/Qwen/Qwen3-30B-A3B; MindSpeed-RL qwen3_30b_a3b.yaml): "
        "hidden_size 2048, moe_intermediate_size 768, num_experts 128, num_experts_per_tok 8")),
    "hy3": dict(hidden=4096, intermediate=1536, experts=192, topk=8, source=(
        "Tencent Hy3-preview (NVIDIA NeMo AutoModel HYV3Config defaults): hidden_size 4096, "
        "moe_intermediate_size 1536, num_experts 192, num_experts_per_tok 8")),
    "hunyuan-large": dict(hidden=6400, intermediate=18304, experts=16, topk=1, source=(
        "Tencent-Hunyuan-Large Hunyuan-A52B-Instruct config.json (huggingface.co/tencent/Tencent-Hunyuan-Large): "
        "hidden_size 6400, intermediate_size 18304, num_experts 16, moe_topk 1")),
    "mimo-v2.5": dict(hidden=4096, intermediate=2048, experts=256, topk=8, source=(
        "MiMo-V2.5 keeps the MiMo-V2-Flash text backbone (NVIDIA NeMo AutoModel MiMoV2Config docs); "
        "MiMoV2FlashConfig: hidden_size 4096, moe_intermediate_size 2048, n_routed_experts 256, "
        "num_experts_per_tok 8")),
    "glm-5.2": dict(hidden=6144, intermediate=2048, experts=256, topk=8, source=(
        "GLM-5 (zai-org/GLM-5; NVIDIA NeMo AutoModel GlmMoeDsaConfig): hidden_size 6144, "
        "moe_intermediate_size 2048, n_routed_experts 256, num_experts_per_tok 8; GLM-5.2 has the same "
        "architecture (Megatron Bridge GLM-5 docs)")),
    "dsv4-flash": dict(hidden=4096, intermediate=2048, experts=256, topk=6, source=(
        "DeepSeek-V4-Flash (NVIDIA NeMo AutoModel DeepseekV4Config defaults; "
        "huggingface.co/inference-optimization/DeepSeek-V4-Flash-bf16-dequantized-5layers config.json): "
        "hidden_size 4096, moe_intermediate_size 2048, n_routed_experts 256, num_experts_per_tok 6")),
    "dsv4-pro": dict(hidden=7168, intermediate=3072, experts=384, topk=6, source=(
        "DeepSeek-V4-Pro config.json as summarised by apxml.com/models/deepseek-v4-pro and "
        "lzwjava.github.io (deepseek-v4-pro architecture overview): hidden 7168, 384 routed experts, "
        "6 per token, expert intermediate 3072")),
}

# The paper's seven Table 2 models, in its order.
PAPER_MODELS = ("dit-moe", "qwen3.5", "hy3", "mimo-v2.5", "glm-5.2", "dsv4-flash", "dsv4-pro")

# Table 2 (W8A8, skewed routing, 55,808 tokens, 8 GPUs; us): span wave/int medians, full-tile
# L2/L1 mainloop medians, stall per tile prediction/measurement for wave and interleaved.
PAPER_TABLE2 = {
    "dit-moe":    dict(span=(9.93, 3.77), t_mma=(5.30, 9.77), wave=(4.63, 4.18), int=(0.0, 0.04)),
    "qwen3.5":    dict(span=(9.17, 3.82), t_mma=(4.24, 14.40), wave=(4.94, 4.31), int=(0.0, 0.04)),
    "hy3":        dict(span=(9.68, 3.59), t_mma=(6.09, 10.79), wave=(3.60, 3.08), int=(0.0, 0.05)),
    "mimo-v2.5":  dict(span=(9.22, 3.94), t_mma=(7.77, 7.57), wave=(1.45, 0.71), int=(0.0, 0.05)),
    "glm-5.2":    dict(span=(9.53, 3.63), t_mma=(7.99, 18.77), wave=(1.54, 0.92), int=(0.0, 0.04)),
    "dsv4-flash": dict(span=(9.48, 3.83), t_mma=(8.01, 7.40), wave=(1.47, 0.65), int=(0.0, 0.05)),
    "dsv4-pro":   dict(span=(7.88, 3.55), t_mma=(9.54, 11.57), wave=(0.0, 0.06), int=(0.0, 0.04)),
}
PAPER_TOKENS = 55_808   # Table 2 caption
