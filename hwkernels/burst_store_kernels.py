"""CUDA C++ source of the burst-store microbenchmark (kernels only; see burst_store.py).

One kernel, `burst_store`, compiled once per store mechanism (-DMECH=...). K producer CTAs
(one per SM, co-resident) each store B bytes per burst into `dst`, then spin a gap of
`gap_cycles` SM cycles with no stores, `bursts` times. Burst j of producer p writes the B
bytes at dst + ((j % ring)*K + p)*B (burst-major layout; `ring` slots of K*B bytes spanning
well over twice the L2, so every burst writes lines no earlier burst left in the L2: see
destination.py), each 4-byte word w holding pattern_word(p, j, w) (pattern.py holds the
reference and the constants, substituted into this source).

Timing (thread 0 of each CTA), per (producer, burst), into stamps[(p*bursts + j)*STAMP_WORDS + :]
(the layout timing.py reads: its STAMP_*/INFO_* indices are substituted below):
  [0] clock64 at issue start   (after __syncthreads: the whole CTA is ready)
  [1] clock64 at issue end     (after __syncthreads that follows the last store:
                                every thread's stores issued/accepted; no fence)
  [2] %globaltimer at issue start, [3] %globaltimer at issue end
Per CTA, into info[p*INFO_WORDS + :]: a globaltimer edge at kernel start [0] (ns) with the clock64
read right at that edge [1], the same at kernel end [2], [3], and %smid [4]. The edges map
every clock64 stamp of that SM onto the global ns timeline (resolution of the clock, not of
the coarser globaltimer) and give the SM clock rate over the whole kernel.

Mechanisms: 0 st.global.v4 (16 B per thread-store), 1 st.global.v2 (8 B), 2 st.global.b32
(4 B), 3 bulk copy `cp.async.bulk.global.shared::cta` from a shared-memory staging buffer
(filled before the issue-start stamp, like an epilogue's staged tile). For bulk copies,
issue end is `cp.async.bulk.wait_group.read 0` in every issuing lane: the staging buffer
has been read, i.e. the slot an epilogue would reuse is free.

Aligned mode: a grid-wide barrier (monotonic counter `bar`, zeroed before launch) before
every burst. A barrier wait longer than `timeout_cycles` sets *err = 1 and from then on the
kernel stops waiting, so it can never hang.
"""

from string import Template

from .pattern import C_J, C_P, C_W
from .timing import (INFO_CLK0, INFO_CLK1, INFO_NS0, INFO_NS1, INFO_SMID, STAMP_CLK_END, STAMP_CLK_START,
                     STAMP_NS_END, STAMP_NS_START)

MECHANISMS = {"st.v4": 0, "st.v2": 1, "st.b32": 2, "tma": 3}
INFO_WORDS = 8
STAMP_WORDS = 4
TMA_CHUNK_BYTES = 4096   # bytes per cp.async.bulk instruction

# The CUDA helpers every NVRTC kernel of ours starts with (the load-gate kernels too); a
# Template like the sources (${C_W}).
CUDA_PRELUDE = r"""
typedef unsigned int u32;
typedef unsigned long long u64;

__device__ __forceinline__ u64 global_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ u32 sm_id() {
    u32 s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

// Word w of a burst whose base is pattern_base(...): pattern.py's formula (uint32 wrap-around).
__device__ __forceinline__ u32 pattern_word(u32 base, u32 w) {
    return base ^ (w * ${C_W}u);
}

// Spin until %globaltimer ticks; return the new value and the clock64 read at the tick.
__device__ __forceinline__ void timer_edge(long long* out) {
    u64 g0 = global_ns();
    u64 g;
    long long c;
    do {
        g = global_ns();
        c = clock64();
    } while (g == g0);
    out[0] = (long long)g;
    out[1] = c;
}
"""

_SOURCE = Template(CUDA_PRELUDE + r"""
#ifndef MECH
#define MECH 0
#endif
#define TMA_CHUNK ${TMA_CHUNK}u

// Word w of producer p's burst j. Same formula as pattern.py (uint32 wrap-around).
__device__ __forceinline__ u32 pattern_base(u32 p, u32 j) {
    return (p * ${C_P}u) ^ (j * ${C_J}u);
}

__device__ __forceinline__ void grid_barrier(u32* bar, u32 target, long long timeout_cycles,
                                             int* err) {
    __syncthreads();
    if (threadIdx.x == 0 && *(volatile int*)err == 0) {
        atomicAdd(bar, 1u);
        long long t0 = clock64();
        while (*(volatile u32*)bar < target) {
            if (clock64() - t0 > timeout_cycles) {
                atomicExch(err, 1);
                break;
            }
        }
    }
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(1024, 1)
burst_store(unsigned char* __restrict__ dst, u64 burst_bytes, int bursts, int ring,
            long long gap_cycles, int aligned, u32* bar, int* err,
            long long* __restrict__ stamps, long long* __restrict__ info,
            long long timeout_cycles)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 p = blockIdx.x;
    const u32 K = gridDim.x;
    const u32 tid = threadIdx.x;
    const u32 nt = blockDim.x;
    long long edge[2];

    if (tid == 0) {
        timer_edge(edge);
        info[p * ${INFO_WORDS} + ${INFO_NS0}] = edge[0];
        info[p * ${INFO_WORDS} + ${INFO_CLK0}] = edge[1];
        info[p * ${INFO_WORDS} + ${INFO_SMID}] = (long long)sm_id();
    }

    for (int j = 0; j < bursts; ++j) {
        if (aligned) grid_barrier(bar, (u32)(j + 1) * K, timeout_cycles, err);
        const u32 base = pattern_base(p, (u32)j);
        unsigned char* out = dst + ((u64)(j % ring) * K + p) * burst_bytes;
#if MECH == 3
        {   // stage the tile in shared memory (not part of the issue span)
            uint4* s4 = reinterpret_cast<uint4*>(smem);
            const u32 n16 = (u32)(burst_bytes / 16);
            for (u32 i = tid; i < n16; i += nt) {
                const u32 w = 4u * i;
                s4[i] = make_uint4(pattern_word(base, w), pattern_word(base, w + 1),
                                   pattern_word(base, w + 2), pattern_word(base, w + 3));
            }
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        }
#endif
        __syncthreads();
        long long c0 = 0;
        u64 g0 = 0;
        if (tid == 0) {
            g0 = global_ns();
            c0 = clock64();
        }
#if MECH == 0
        {
            uint4* o4 = reinterpret_cast<uint4*>(out);
            const u32 n16 = (u32)(burst_bytes / 16);
#pragma unroll 4
            for (u32 i = tid; i < n16; i += nt) {
                const u32 w = 4u * i;
                o4[i] = make_uint4(pattern_word(base, w), pattern_word(base, w + 1),
                                   pattern_word(base, w + 2), pattern_word(base, w + 3));
            }
        }
#elif MECH == 1
        {
            uint2* o2 = reinterpret_cast<uint2*>(out);
            const u32 n8 = (u32)(burst_bytes / 8);
#pragma unroll 4
            for (u32 i = tid; i < n8; i += nt) {
                const u32 w = 2u * i;
                o2[i] = make_uint2(pattern_word(base, w), pattern_word(base, w + 1));
            }
        }
#elif MECH == 2
        {
            u32* o1 = reinterpret_cast<u32*>(out);
            const u32 n4 = (u32)(burst_bytes / 4);
#pragma unroll 4
            for (u32 i = tid; i < n4; i += nt) o1[i] = pattern_word(base, i);
        }
#elif MECH == 3
        if ((tid & 31u) == 0) {
            const u32 warp = tid >> 5;
            const u32 nwarps = (nt + 31u) >> 5;
            const u32 bytes = (u32)burst_bytes;
            const u32 nchunks = (bytes + TMA_CHUNK - 1u) / TMA_CHUNK;
            const u32 s_base = (u32)__cvta_generic_to_shared(smem);
            for (u32 c = warp; c < nchunks; c += nwarps) {
                const u32 off = c * TMA_CHUNK;
                const u32 sz = min(TMA_CHUNK, bytes - off);
                asm volatile(
                    "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                    :: "l"(out + off), "r"(s_base + off), "r"(sz) : "memory");
            }
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        }
#endif
        __syncthreads();
        if (tid == 0) {
            const long long c1 = clock64();
            const u64 g1 = global_ns();
            long long* s = stamps + ((u64)p * bursts + j) * ${STAMP_WORDS};
            s[${STAMP_CLK_START}] = c0;
            s[${STAMP_CLK_END}] = c1;
            s[${STAMP_NS_START}] = (long long)g0;
            s[${STAMP_NS_END}] = (long long)g1;
        }
        if (gap_cycles > 0) {
            const long long t = clock64();
            while (clock64() - t < gap_cycles) { }
        }
    }
#if MECH == 3
    if ((tid & 31u) == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
    __syncthreads();
    if (tid == 0) {
        timer_edge(edge);
        info[p * ${INFO_WORDS} + ${INFO_NS1}] = edge[0];
        info[p * ${INFO_WORDS} + ${INFO_CLK1}] = edge[1];
    }
}

// Resolution probe: record the first `n` distinct %globaltimer steps seen by one thread.
extern "C" __global__ void timer_probe(long long* out, int n) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    u64 last = global_ns();
    for (int i = 0; i < n; ++i) {
        u64 g;
        do { g = global_ns(); } while (g == last);
        out[i] = (long long)(g - last);
        last = g;
    }
}
""")
SOURCE = _SOURCE.substitute(C_P=C_P, C_J=C_J, C_W=C_W, TMA_CHUNK=TMA_CHUNK_BYTES, INFO_WORDS=INFO_WORDS,
                            STAMP_WORDS=STAMP_WORDS, INFO_NS0=INFO_NS0, INFO_CLK0=INFO_CLK0, INFO_NS1=INFO_NS1,
                            INFO_CLK1=INFO_CLK1, INFO_SMID=INFO_SMID, STAMP_CLK_START=STAMP_CLK_START,
                            STAMP_CLK_END=STAMP_CLK_END, STAMP_NS_START=STAMP_NS_START, STAMP_NS_END=STAMP_NS_END)
