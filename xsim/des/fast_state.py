"""The fast engine's state: every entity of a run as a few arrays with declared layouts.

Each array has one index space (:mod:`xsim.des.layout`); the fast engine's functions take the
bundles below. Nothing is allocated while the engine runs.

=====================  ==========================  ==============================================
array                  shape                       a row/column holds
=====================  ==========================  ==============================================
``tiles.f``            float[TileF, tiles]         the tile's event times (TileTimes' fields, in
                                                   order), its drain mark, its workload columns
``tiles.i``            int[TileI, tiles]           producer, counter wait and signal, its drain
                                                   marks' FIFO link, its drained event's state and
                                                   callbacks (a linked list of tiles)
``producers.i``        int[producers, ProducerI]   stream bounds, GPU and column, each role's
                                                   program counter and tile, slots, FIFO, waits
``producers.f``        float[producers, ProducerF] when the compute role became ready / met deps
``counters``           int[counters, CounterI]     value, its waiting mainloops (linked through
                                                   ``producers.i``), the lowest threshold waited on
``xstages.stage``      float[stages, Stage]        the fluid's scalars (:mod:`xsim.des.fluid_state`)
``xstages.count``      int[stages, StageCount]     the fluid's list lengths
``xstages.drain_f``    float[stages, DrainF]       the drain: last q(t) point, its pending timer
``xstages.drain_i``    int[stages, DrainI]         the drain: how it sleeps; the stage's columns
``xstages.fluid``      float[Fluid, columns]       the fluid's per-producer rows,
``xstages.status``     int[Status, columns]        ... its per-producer ints,
``xstages.lists``      int[List, columns]          ... its lists (positions in the stage's block),
``xstages.trees``      float[Tree, columns]        ... its min-trees (nodes in the stage's block)
``xstages.column``     int[Column, columns]        per column: its producer, the tile it issues,
                                                   its FIFO of drain marks (linked through tiles)
``queue``              :class:`~xsim.des.event_queue.Queue`
=====================  ==========================  ==============================================

Columns: stage g's producers, in producer order, are columns ``BASE .. BASE + SIZE`` of
``drain_i[g]``; the fluid functions get column views of that block (:func:`fluid_stage`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from xsim.des import event_queue
from xsim.des.event_queue import Queue
from xsim.des.fluid_state import new_stage
from xsim.des.jit import inline
from xsim.des.layout import columns, layout, rows
from xsim.workload import Workload

INT_MAX = np.iinfo(np.int64).max

# what a queue entry does when it is processed (its argument: a producer, a tile or a stage);
# K_MAIN: a mainloop's end at a stall gate (stale unless its generation is the producer's
# MMA_GEN), K_PAUSE: the stage pauses it (SimPy's Process.interrupt)
(K_MMA, K_ISSUER, K_STORE_PUT, K_STORE_GET, K_SLOT_PUT, K_DRAINED, K_WAKE, K_DRAIN, K_MAIN, K_PAUSE) = range(10)
# the load gate the workload's mainloops wait at (State.gate)
GATE_NONE, GATE_PRODUCER, GATE_LINK, GATE_FIFO, GATE_FIFO_LINK = range(5)

# per tile: TileTimes' fields in order (the results), the drain mark, the workload's float columns
TileF = layout("TileF", "MAINLOOP_START MAINLOOP_END ISSUE_START ISSUE_END DRAIN_END STALL DEP_WAIT GATE_WAIT "
                        "MARK MAINLOOP_US EPILOGUE_US BYTES T_ISS0_US RELEASE_US")
N_TIMES = TileF.GATE_WAIT + 1
# per tile: the workload's int columns; the next tile in its producer's mark FIFO; its drained
# event (DRAINED: one of DR_*) and that event's callbacks, a linked list of tiles
TileI = layout("TileI", "PRODUCER WAIT WAIT_VALUE SIGNAL SIGNAL_ON_DRAIN MARK_NEXT DRAINED CB_HEAD CB_TAIL CB_NEXT")
DR_NONE, DR_SCHEDULED, DR_PROCESSED = range(3)
# per producer: its tiles FIRST .. END, its GPU and column in that stage; the compute role's
# program counter, tile, and whether it waits for a slot; free SLOTS; the FIFO of finished tiles
# (tile numbers HEAD .. TAIL); the epilogue role's program counter, tile, whether it waits for a
# tile, tiles done; the next producer waiting on the same counter and its threshold; its latest
# remote tile and the tile whose drained event it waits on; the next producer waiting at the same
# link- or fifo-scope load gate; its mainloop's state at a stall gate (xsim.des.stall.IDLE ..
# RUNNING) and the generation of its pending end (K_MAIN)
ProducerI = layout("ProducerI", "FIRST END GPU COLUMN MMA_PC MMA_TILE MMA_WAITS_SLOT SLOTS FIFO_HEAD FIFO_TAIL "
                                "ISS_PC ISS_TILE ISS_WAITS_TILE ISS_DONE WAIT_NEXT WAIT_VALUE LAST_REMOTE EVENT "
                                "GATE_NEXT STALL MMA_GEN")
# when the compute role got ready, met deps, got a slot; the stage's accepted bytes (since its
# anchor, xsim.des.gate) when its mainloop began to wait at a fifo-scope gate; at a stall gate:
# when its mainloop last resumed, the work it had left then (us), when it was last paused
ProducerF = layout("ProducerF", "READY DEPS_MET SLOT_AT GATE_ACC RUN_T LEFT PAUSE_T")
CounterI = layout("CounterI", "VALUE HEAD TAIL MIN_WAIT")   # waiting producers HEAD .. TAIL
# per stage: the time and total of the last q(t) point; the drain's pending timeout (inf: none);
# when the total q reaches a link-scope load gate's threshold (fifo scope: the head waiter's
# target); fifo scope: bytes accepted since the anchor at the last turn, that turn's time, the rate since;
# fifo-link scope: when the total q reaches the link threshold (the waiters past the fence)
DrainF = layout("DrainF", "TRACE_T TRACE_Q TIMER GATE_KEY ACC ACC_T ACC_RATE THEN_KEY")
# per stage: the drain's generation (a wake of an older one is stale), how it sleeps (SLEEP_*),
# whether its (timeout | wake) condition is pending, whether it was woken this instant; the
# stage's columns BASE .. BASE + SIZE; the key SimPy would give its timer; the producers waiting
# at a link- or fifo-scope load gate, GATE_HEAD .. GATE_TAIL (linked through ProducerI.GATE_NEXT; -1: none);
# how many mainloops are at a link-scope stall gate (GATE_KEY: its next crossing); fifo-link scope: the
# producers past the fence at the link gate, THEN_HEAD .. THEN_TAIL (through ProducerI.GATE_NEXT too)
DrainI = layout("DrainI", "GEN SLEEP COND WOKEN SIZE BASE TIMER_KEY GATE_HEAD GATE_TAIL STALL_COUNT THEN_HEAD "
                          "THEN_TAIL")
SLEEP_WAKE_ONLY, SLEEP_COND = 1, 2   # the drain sleeps on its wake event / on (timeout | wake)
# per column: its producer, the tile it issues (-1: none), its FIFO of drain marks (tiles)
Column = layout("Column", "PRODUCER ISSUING MARK_HEAD MARK_TAIL")


class Tiles(NamedTuple):
    f: np.ndarray   # float[TileF, tiles]
    i: np.ndarray   # int[TileI, tiles]


class Producers(NamedTuple):
    i: np.ndarray   # int[producers, ProducerI]
    f: np.ndarray   # float[producers, ProducerF]


class XStages(NamedTuple):
    stage: np.ndarray     # float[stages, Stage]
    count: np.ndarray     # int[stages, StageCount]
    drain_f: np.ndarray   # float[stages, DrainF]
    drain_i: np.ndarray   # int[stages, DrainI]
    fluid: np.ndarray     # float[Fluid, columns]
    status: np.ndarray    # int[Status, columns]
    lists: np.ndarray     # int[List, columns]
    trees: np.ndarray     # float[Tree, columns]
    column: np.ndarray    # int[Column, columns]


class State(NamedTuple):
    tiles: Tiles
    producers: Producers
    counters: np.ndarray  # int[counters, CounterI]
    xstages: XStages
    queue: Queue
    coupled: bool         # completion-coupled: the issuer waits for each tile's last byte
    tracing: bool         # record the q(t) breakpoints
    gate: int             # the load gate mainloops wait at: GATE_NONE, GATE_PRODUCER, GATE_LINK, GATE_FIFO or GATE_FIFO_LINK
    stall: bool           # the gate's mode is stall: it also pauses running mainloops (xsim.des.stall)


@inline
def fluid_stage(x, g):
    """Stage g's fluid arrays in :class:`~xsim.des.fluid_state.FluidStage` order: its rows of the
    per-stage arrays and 'A'-layout views of its block of columns (the cache-safe layout,
    :mod:`xsim.des.jit`)."""
    lo = x.drain_i[g, DrainI.BASE]
    hi = lo + x.drain_i[g, DrainI.SIZE]
    return (x.stage[g], x.count[g], x.fluid[:, lo:hi], x.status[:, lo:hi], x.lists[:, lo:hi], x.trees[:, lo:hi])


# ---- Python side: the initial state of a workload ------------------------------------------------

def _tiles(w: Workload) -> Tiles:
    f = rows(TileF, w.n_tiles, fill=np.nan)
    for row, column in ((TileF.MAINLOOP_US, w.mainloop_us), (TileF.EPILOGUE_US, w.epilogue_us),
                        (TileF.BYTES, w.bytes), (TileF.T_ISS0_US, w.t_iss0_us), (TileF.RELEASE_US, w.release_us)):
        f[row] = column
    i = rows(TileI, w.n_tiles, np.int64, fill=-1)
    for row, column in ((TileI.PRODUCER, w.producer), (TileI.WAIT, w.wait_counter), (TileI.WAIT_VALUE, w.wait_value),
                        (TileI.SIGNAL, w.signal_counter), (TileI.SIGNAL_ON_DRAIN, w.signal_on_drain)):
        i[row] = column
    f[TileF.GATE_WAIT] = 0.0   # written only for a mainloop the load gate checks
    i[TileI.DRAINED] = DR_NONE
    return Tiles(f, i)


def _xstages(w: Workload) -> XStages:
    """Per stage the fluid's and the drain's rows; per column the fluid's and the column's, by
    stage in producer order."""
    n_g = len(w.xstages)
    drain_i = columns(DrainI, n_g, np.int64)
    drain_i[:, DrainI.SIZE] = np.bincount(w.producer_gpu, minlength=n_g)
    drain_i[:, DrainI.BASE] = np.concatenate([[0], np.cumsum(drain_i[:, DrainI.SIZE])[:-1]])
    drain_i[:, DrainI.GATE_HEAD] = drain_i[:, DrainI.GATE_TAIL] = -1
    drain_i[:, DrainI.THEN_HEAD] = drain_i[:, DrainI.THEN_TAIL] = -1
    drain_f = columns(DrainF, n_g)
    drain_f[:, DrainF.TIMER] = drain_f[:, DrainF.GATE_KEY] = drain_f[:, DrainF.THEN_KEY] = math.inf
    producers = np.argsort(w.producer_gpu, kind="stable")  # column -> producer
    weight = np.asarray(w.producer_weight, dtype=float)
    gate_bytes = w.gate.threshold_bytes if w.gate is not None else math.inf
    stalls = w.gate is not None and w.gate.stalls
    cap_factor = None if w.producer_capacity is None else np.asarray(w.producer_capacity, dtype=float)
    stages = [new_stage(x.drain_bytes_per_us, x.capacity_bytes / max(int(n), 1), weight[producers[b:b + n]], gate_bytes,
                        stalls, None if cap_factor is None else cap_factor[producers[b:b + n]])
              for x, b, n in zip(w.xstages, drain_i[:, DrainI.BASE], drain_i[:, DrainI.SIZE])]
    per_stage = [np.stack([s[a] for s in stages]) for a in range(2)]
    per_column = [np.concatenate([s[a] for s in stages], axis=1) for a in range(2, 6)]
    column = rows(Column, w.n_producers, np.int64, fill=-1)
    column[Column.PRODUCER] = producers
    return XStages(*per_stage, drain_f, drain_i, *per_column, column)


def _producers(w: Workload, x: XStages) -> Producers:
    p = columns(ProducerI, w.n_producers, np.int64)
    p[:, ProducerI.FIRST] = p[:, ProducerI.MMA_TILE] = w.offsets[:-1]
    p[:, ProducerI.FIFO_HEAD] = p[:, ProducerI.FIFO_TAIL] = w.offsets[:-1]
    p[:, ProducerI.END], p[:, ProducerI.GPU], p[:, ProducerI.SLOTS] = w.offsets[1:], w.producer_gpu, w.slots
    p[:, ProducerI.WAIT_NEXT] = p[:, ProducerI.LAST_REMOTE] = p[:, ProducerI.GATE_NEXT] = -1
    bases, sizes = x.drain_i[:, DrainI.BASE], x.drain_i[:, DrainI.SIZE]
    p[x.column[Column.PRODUCER], ProducerI.COLUMN] = np.arange(w.n_producers) - np.repeat(bases, sizes)  # in its stage
    return Producers(p, columns(ProducerF, w.n_producers))


def initial_state(w: Workload, trace: bool) -> State:
    """Every entity of ``w`` before its first event."""
    x = _xstages(w)
    counters = columns(CounterI, w.n_counters, np.int64)
    counters[:, CounterI.HEAD] = counters[:, CounterI.TAIL] = -1
    counters[:, CounterI.MIN_WAIT] = INT_MAX
    queue = event_queue.empty(8 * w.n_producers + 8 * len(w.xstages) + 1024)  # a few per process, with room
    scopes = {"producer": GATE_PRODUCER, "link": GATE_LINK, "fifo": GATE_FIFO, "fifo-link": GATE_FIFO_LINK}
    gate = GATE_NONE if w.gate is None else scopes[w.gate.scope]
    return State(_tiles(w), _producers(w, x), counters, x, queue, w.coupling == "completion-coupled", trace, gate,
                 w.gate is not None and w.gate.stalls)
