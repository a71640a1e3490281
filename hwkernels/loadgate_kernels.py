"""CUDA C++ source of the load-gate microbenchmark (kernel only; see loadgate.py).

One kernel, ``loadgate``: does an SM's load phase wait behind the posted host stores it (or a
CTA beside it) has just issued? Every CTA of the grid, after one grid barrier:

1. store phase: a storing CTA writes its B bytes (st.global.v4, the burst-store suite's loop
   and data pattern, burst 0 of producer ``slot``) to ``dst + slot*B``;
2. ``__syncthreads`` (all stores issued/accepted, no fence), then optionally a
   ``__threadfence_system`` (fence.sc.sys) in every thread, or a clock spin of ``gap_cycles``;
3. load phase: a loading CTA streams its own L bytes of a device buffer (not in the L2: the
   harness flushes it) with 16-byte loads, 8 in flight per thread, sums the 32-bit words into a
   register, adds the per-thread sums in shared memory and writes the one word to
   ``result[blockIdx.x]`` (local device memory).

Roles (``mode``): 0 "solo": one CTA per SM; CTA q < n_store stores (slot q) then loads, the
others only load (bystanders on other SMs). 1 "cosm": two CTAs per SM; the first on each SM
(per-SM arrival counter) stores (slot = %smid) and raises flags[smid] with a relaxed atomic
after its stores are issued; the second waits for that flag, then loads. 2 "late": one CTA per
SM; CTA q < n_store stores and loads as in "solo"; every other CTA (set C, index s = q - n_store
of n_late) loads nothing: it spins ``late_delay_cycles`` from the grid barrier, then stores
``late_bursts`` bursts of ``late_bytes`` (a spin of ``late_spin_cycles`` between two), burst j
at ``dst + n_store*B + (j*n_late + s)*late_bytes`` with the pattern of producer s, burst j.

Stamps (thread 0, clock64) per CTA into stamps[q*8 + :]:
  [0] store start (after the barrier; set C: after its delay), [1] stores issued (after
  __syncthreads; set C: its last burst's),
  [2] load start (after fence / gap / flag wait and a __syncthreads),
  [3] thread 0's first load returned (a branch on its value), [4] load end (after the
  __syncthreads that follows every thread's last load and its shared-memory add).
Per CTA into info[q*8 + :]: %globaltimer edge at kernel start [0] with its clock64 [1], the
same at kernel end [2], [3]; %smid [4]; role [5]; slot [6].
"""

from string import Template

from .burst_store_kernels import CUDA_PRELUDE
from .pattern import C_J, C_P, C_W

INFO_WORDS = 8
STAMP_WORDS = 8
ROLE_STORE_LOAD, ROLE_LOAD, ROLE_STORE, ROLE_FLAG_LOAD, ROLE_LATE = range(5)
MODES = {"solo": 0, "cosm": 1, "late": 2}
LOADS_IN_FLIGHT = 8
TMA_CHUNK_BYTES = 16 * 1024   # bytes per bulk load
TMA_STAGES = 4               # bulk loads in flight per CTA (64 KiB of shared memory)

_SOURCE = Template(CUDA_PRELUDE + r"""

__device__ __forceinline__ void tma_issue(u32 c, const unsigned char* src, u32 sbase, u32 mbase) {
    const u32 st = c % ${STAGES}u;
    const u32 bar = mbase + 8u * st;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(${CHUNK}u) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(sbase + st * ${CHUNK}u), "l"(src + (u64)c * ${CHUNK}u), "r"(${CHUNK}u), "r"(bar) : "memory");
}

__device__ __forceinline__ bool mbar_wait(u32 bar, u32 phase, long long timeout_cycles) {
    const long long t0 = clock64();
    while (true) {
        u32 done;
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(bar), "r"(phase) : "memory");
        if (done) return true;
        if (clock64() - t0 > timeout_cycles) return false;
    }
}

// Sum of the 32-bit words of n_chunks chunks of CHUNK bytes at src, brought into shared memory by
// bulk copies (cp.async.bulk, STAGES in flight; thread 0 issues), every thread adding its share.
__device__ u32 tma_sum(const unsigned char* src, u32 n_chunks, unsigned char* smem, u64* mbar, int* err,
                       long long timeout_cycles, long long* first_ready) {
    const u32 tid = threadIdx.x, nt = blockDim.x;
    const u32 sbase = (u32)__cvta_generic_to_shared(smem);
    const u32 mbase = (u32)__cvta_generic_to_shared(mbar);
    if (tid == 0) {
        for (u32 k = 0; k < ${STAGES}u; ++k)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(mbase + 8u * k) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (tid == 0)
        for (u32 c = 0; c < n_chunks && c < ${STAGES}u; ++c) tma_issue(c, src, sbase, mbase);
    u32 acc = 0u;
    bool ok = true;
    for (u32 c = 0; c < n_chunks; ++c) {
        const u32 st = c % ${STAGES}u;
        if (ok && !mbar_wait(mbase + 8u * st, (c / ${STAGES}u) & 1u, timeout_cycles)) {
            atomicOr(err, 16);
            ok = false;
        }
        if (c == 0 && tid == 0) *first_ready = clock64();
        const uint4* p = reinterpret_cast<const uint4*>(smem + st * ${CHUNK}u);
        for (u32 i = tid; i < ${CHUNK}u / 16u; i += nt) {
            const uint4 v = p[i];
            acc += v.x + v.y + v.z + v.w;
        }
        __syncthreads();
        if (tid == 0 && ok && c + ${STAGES}u < n_chunks) tma_issue(c + ${STAGES}u, src, sbase, mbase);
    }
    return acc;
}

extern "C" __global__ void __launch_bounds__(1024, 1)
loadgate(unsigned char* __restrict__ dst, u64 burst_bytes, const uint4* src,
         u64 load_bytes, int tma_loads, u32* __restrict__ result, long long gap_cycles, int fence, int mode,
         int n_store, u32* bar, u32* sm_count, u32* flags, int* err,
         long long* __restrict__ stamps, long long* __restrict__ info, long long timeout_cycles,
         u64 late_bytes, long long late_delay_cycles, int late_bursts, long long late_spin_cycles)
{
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ u32 s_sum;
    __shared__ int s_role;
    __shared__ u32 s_slot;
    __shared__ __align__(8) u64 mbar[${STAGES}];
    const u32 q = blockIdx.x;
    const u32 tid = threadIdx.x;
    const u32 nt = blockDim.x;
    long long edge[2];
    long long c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0;

    if (tid == 0) {
        timer_edge(edge);
        info[q * ${INFO_WORDS} + 0] = edge[0];
        info[q * ${INFO_WORDS} + 1] = edge[1];
        const u32 sm = sm_id();
        int role;
        u32 slot;
        if (mode == 0 || mode == 2) {
            role = ((int)q < n_store) ? ${ROLE_STORE_LOAD} : (mode == 2 ? ${ROLE_LATE} : ${ROLE_LOAD});
            slot = q;
        } else {
            const u32 arrival = atomicAdd(&sm_count[sm], 1u);
            role = (arrival == 0u) ? ${ROLE_STORE} : ${ROLE_FLAG_LOAD};
            slot = sm;
        }
        info[q * ${INFO_WORDS} + 4] = (long long)sm;
        info[q * ${INFO_WORDS} + 5] = (long long)role;
        info[q * ${INFO_WORDS} + 6] = (long long)slot;
        s_role = role;
        s_slot = slot;
        s_sum = 0u;
        smem[0] = 0;   // the dynamic request only sets how many CTAs fit an SM
        // grid barrier: every CTA has arrived (and has its role) before any stores
        atomicAdd(bar, 1u);
        const long long t0 = clock64();
        while (*(volatile u32*)bar < gridDim.x) {
            if (clock64() - t0 > timeout_cycles) { atomicOr(err, 1); break; }
        }
    }
    __syncthreads();
    const int role = s_role;
    const u32 slot = s_slot;
    const bool stores = (role == ${ROLE_STORE_LOAD} || role == ${ROLE_STORE}) && burst_bytes > 0;
    const bool loads = role != ${ROLE_STORE} && role != ${ROLE_LATE};
    if (role == ${ROLE_LATE}) {
        if (tid == 0) {
            const long long t = clock64();
            while (clock64() - t < late_delay_cycles) { }
        }
        __syncthreads();
    }
    if (tid == 0) c0 = clock64();
    if (role == ${ROLE_LATE} && late_bytes > 0) {
        const u32 s = q - (u32)n_store, n_late = gridDim.x - (u32)n_store;
        unsigned char* region = dst + (u64)n_store * burst_bytes;
        const u32 n16 = (u32)(late_bytes / 16);
        for (int j = 0; j < late_bursts; ++j) {
            if (j > 0) {
                if (tid == 0) {
                    const long long t = clock64();
                    while (clock64() - t < late_spin_cycles) { }
                }
                __syncthreads();
            }
            const u32 base = (s * ${C_P}u) ^ ((u32)j * ${C_J}u);
            uint4* o4 = reinterpret_cast<uint4*>(region + ((u64)j * n_late + s) * late_bytes);
#pragma unroll 4
            for (u32 i = tid; i < n16; i += nt) {
                const u32 w = 4u * i;
                o4[i] = make_uint4(pattern_word(base, w), pattern_word(base, w + 1),
                                   pattern_word(base, w + 2), pattern_word(base, w + 3));
            }
            __syncthreads();
        }
    }
    if (stores) {
        const u32 base = (slot * ${C_P}u) ^ (0u * ${C_J}u);
        uint4* o4 = reinterpret_cast<uint4*>(dst + (u64)slot * burst_bytes);
        const u32 n16 = (u32)(burst_bytes / 16);
#pragma unroll 4
        for (u32 i = tid; i < n16; i += nt) {
            const u32 w = 4u * i;
            o4[i] = make_uint4(pattern_word(base, w), pattern_word(base, w + 1),
                               pattern_word(base, w + 2), pattern_word(base, w + 3));
        }
    }
    __syncthreads();
    if (tid == 0) c1 = clock64();
    if (fence) __threadfence_system();
    if (role == ${ROLE_STORE} && tid == 0) atomicExch(&flags[slot], 1u);
    if (role == ${ROLE_FLAG_LOAD} && tid == 0) {
        const long long t0 = clock64();
        while (*(volatile u32*)&flags[slot] == 0u) {
            if (clock64() - t0 > timeout_cycles) { atomicOr(err, 4); break; }
        }
    }
    if (gap_cycles > 0) {
        const long long t = clock64();
        while (clock64() - t < gap_cycles) { }
    }
    __syncthreads();
    if (tid == 0) c2 = clock64();
    u32 acc = 0u;
    if (loads && load_bytes > 0) {
        const uint4* s = src + (u64)q * (load_bytes / 16);
        if (tma_loads) {
            acc = tma_sum(reinterpret_cast<const unsigned char*>(s), (u32)(load_bytes / ${CHUNK}), smem, mbar, err,
                          timeout_cycles, &c3);
        } else {
        const u32 n16 = (u32)(load_bytes / 16);
        u32 i = tid;
        if (i < n16) {                      // the first load, stamped by thread 0 when it returns
            const uint4 v = s[i];
            if (tid == 0) {
                if (v.x == 0x9E3779B9u && v.y == 0x7F4A7C15u && v.z == v.w) atomicOr(err, 8);
                c3 = clock64();
            }
            acc += v.x + v.y + v.z + v.w;
            i += nt;
        }
        for (; i + (${LOADS}u - 1u) * nt < n16; i += ${LOADS}u * nt) {
            uint4 v[${LOADS}];
#pragma unroll
            for (u32 k = 0; k < ${LOADS}u; ++k) v[k] = s[i + k * nt];
#pragma unroll
            for (u32 k = 0; k < ${LOADS}u; ++k) acc += v[k].x + v[k].y + v[k].z + v[k].w;
        }
        for (; i < n16; i += nt) {
            const uint4 v = s[i];
            acc += v.x + v.y + v.z + v.w;
        }
        }
        atomicAdd(&s_sum, acc);
    }
    __syncthreads();
    if (tid == 0) {
        c4 = clock64();
        if (loads) result[q] = s_sum;
        long long* st = stamps + (u64)q * ${STAMP_WORDS};
        st[0] = c0; st[1] = c1; st[2] = c2; st[3] = (loads && load_bytes > 0) ? c3 : c2; st[4] = c4;
    }
    __syncthreads();
    if (tid == 0) {
        timer_edge(edge);
        info[q * ${INFO_WORDS} + 2] = edge[0];
        info[q * ${INFO_WORDS} + 3] = edge[1];
    }
}
""")
SOURCE = _SOURCE.substitute(C_P=C_P, C_J=C_J, C_W=C_W, INFO_WORDS=INFO_WORDS, STAMP_WORDS=STAMP_WORDS,
                            ROLE_STORE_LOAD=ROLE_STORE_LOAD, ROLE_LOAD=ROLE_LOAD, ROLE_STORE=ROLE_STORE,
                            ROLE_FLAG_LOAD=ROLE_FLAG_LOAD, ROLE_LATE=ROLE_LATE, LOADS=LOADS_IN_FLIGHT,
                            CHUNK=TMA_CHUNK_BYTES, STAGES=TMA_STAGES)
