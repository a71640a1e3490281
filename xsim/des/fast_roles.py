"""The two roles of a producer as state machines: ``simpy_engine.run``'s ``mma`` and ``issuer``.

Each SimPy process becomes a program counter (``ProducerI.MMA_PC``, ``ProducerI.ISS_PC``) that
sits at the point after the event the role waits for; :func:`mma_run` and :func:`issuer_run`
resume a role until it waits again. The arrays are :mod:`xsim.des.fast_state`'s ``State``.

- ``mma`` (compute role): release time, counter wait, staging-slot get, load gate, mainloop
  (at a stall gate: run, paused, run again: ``MMA_RUN``, ``MMA_PAUSED``), put the finished tile
  into the issuer's FIFO;
- ``issuer`` (epilogue role): take a tile, epilogue, inject into the X-Stage and wait for the
  issue to end, signal, (completion-coupled: wait for the tile's last byte), free a slot.
"""

from __future__ import annotations

from xsim.des import fast_stall
from xsim.des.event_queue import succeed, timeout
from xsim.des.fast_resources import counter_signal, counter_wait, fifo_get, slot_get
from xsim.des.fast_state import (DR_PROCESSED, DR_SCHEDULED, GATE_LINK, GATE_NONE, K_DRAINED, K_ISSUER, K_MAIN,
                                 K_MMA, K_SLOT_PUT, K_STORE_PUT, ProducerF, ProducerI, TileF, TileI)
from xsim.des.fast_xstage import gate_closed, inject, stall_closed
from xsim.des.jit import inline, jit

# program counters: each role sits at the point after the event it waits for
MMA_START, MMA_RELEASED, MMA_DEPS, MMA_SLOT, MMA_GATE, MMA_MAIN, MMA_PUT, MMA_RUN, MMA_PAUSED, DONE = range(10)
ISS_START, ISS_GOT, ISS_EPILOGUE, ISS_ISSUED, ISS_DRAINED, ISS_PUT = range(6)


@inline
def mma_run(s, p, now):
    """Resume producer p's compute role until it waits on an event."""
    pi, pf, tf, ti, q = s.producers.i, s.producers.f, s.tiles.f, s.tiles.i, s.queue
    while True:
        pc, i = pi[p, ProducerI.MMA_PC], pi[p, ProducerI.MMA_TILE]
        if pc == MMA_START:
            if i == pi[p, ProducerI.END]:
                pi[p, ProducerI.MMA_PC] = DONE
                return
            pi[p, ProducerI.MMA_PC] = MMA_RELEASED
            if tf[TileF.RELEASE_US, i] > now:
                timeout(q, now + (tf[TileF.RELEASE_US, i] - now), K_MMA, p)
                return
        elif pc == MMA_RELEASED:
            pf[p, ProducerF.READY] = now
            pi[p, ProducerI.MMA_PC] = MMA_DEPS
            if ti[TileI.WAIT, i] >= 0:
                counter_wait(pi, s.counters, p, ti[TileI.WAIT, i], ti[TileI.WAIT_VALUE, i], now, q)
                return
        elif pc == MMA_DEPS:
            tf[TileF.DEP_WAIT, i] = now - pf[p, ProducerF.READY]
            pf[p, ProducerF.DEPS_MET] = now
            pi[p, ProducerI.MMA_PC] = MMA_SLOT
            slot_get(pi, p, now, q)
            return
        elif pc == MMA_SLOT:
            if s.gate == GATE_NONE or tf[TileF.MAINLOOP_US, i] <= 0:
                _mainloop(s, p, i, now)  # no gate: TileF.GATE_WAIT stays 0
                return
            pf[p, ProducerF.SLOT_AT] = now
            pi[p, ProducerI.MMA_PC] = MMA_GATE
            if s.stall:
                if stall_closed(s.xstages, s.producers, pi[p, ProducerI.GPU], pi[p, ProducerI.COLUMN], p,
                                tf[TileF.MAINLOOP_US, i], now, q, s.gate):
                    return
            elif gate_closed(s.xstages, s.producers, pi[p, ProducerI.GPU], pi[p, ProducerI.COLUMN], p, now, q,
                             s.gate):
                return
        elif pc == MMA_GATE:
            if s.stall and not fast_stall.resume(s.producers, p, now):
                return   # paused again before it resumed: it waits on
            tf[TileF.GATE_WAIT, i] = now - pf[p, ProducerF.SLOT_AT]
            if s.stall:
                tf[TileF.STALL, i] = now - pf[p, ProducerF.DEPS_MET]
                tf[TileF.MAINLOOP_START, i] = now
                _run(s, p, now)
            else:
                _mainloop(s, p, i, now)
            return
        elif pc == MMA_PAUSED:
            if not fast_stall.resume(s.producers, p, now):
                return
            tf[TileF.GATE_WAIT, i] += now - pf[p, ProducerF.PAUSE_T]
            tf[TileF.STALL, i] += now - pf[p, ProducerF.PAUSE_T]
            _run(s, p, now)
            return
        elif pc == MMA_RUN:  # the mainloop at a stall gate has done its work
            fast_stall.finish(s.xstages, s.producers, pi[p, ProducerI.GPU], pi[p, ProducerI.COLUMN], p,
                              s.gate == GATE_LINK)
            pi[p, ProducerI.MMA_PC] = MMA_MAIN
        elif pc == MMA_MAIN:
            tf[TileF.MAINLOOP_END, i] = now
            pi[p, ProducerI.FIFO_TAIL] += 1  # Store.put: the item is in the FIFO at once
            pi[p, ProducerI.MMA_PC] = MMA_PUT
            succeed(q, now, K_STORE_PUT, p, 0)
            return
        else:  # MMA_PUT
            pi[p, ProducerI.MMA_PC], pi[p, ProducerI.MMA_TILE] = MMA_START, i + 1


@inline
def _mainloop(s, p, i, now):
    """Producer p's compute role starts tile i's mainloop (its slot taken, past the load gate)."""
    tf = s.tiles.f
    tf[TileF.STALL, i] = now - s.producers.f[p, ProducerF.DEPS_MET]
    tf[TileF.MAINLOOP_START, i] = now
    s.producers.i[p, ProducerI.MMA_PC] = MMA_MAIN
    timeout(s.queue, now + tf[TileF.MAINLOOP_US, i], K_MMA, p)


@inline
def _run(s, p, now):
    """Producer p's mainloop at a stall gate runs from now with the work it has left."""
    s.producers.i[p, ProducerI.MMA_PC] = MMA_RUN
    timeout(s.queue, now + s.producers.f[p, ProducerF.LEFT], K_MAIN, p, s.producers.i[p, ProducerI.MMA_GEN])


@jit
def mma_paused(producers, p, now):
    """The stage paused producer p's running mainloop (SimPy's interrupt): it waits from now."""
    producers.f[p, ProducerF.PAUSE_T] = now
    producers.i[p, ProducerI.MMA_PC] = MMA_PAUSED


@inline
def issuer_run(s, p, now):
    """Resume producer p's epilogue role until it waits on an event."""
    pi, tf, ti, q = s.producers.i, s.tiles.f, s.tiles.i, s.queue
    while True:
        pc, i = pi[p, ProducerI.ISS_PC], pi[p, ProducerI.ISS_TILE]
        if pc == ISS_START:
            if pi[p, ProducerI.ISS_DONE] == pi[p, ProducerI.END] - pi[p, ProducerI.FIRST]:
                pi[p, ProducerI.ISS_PC] = DONE
                return
            pi[p, ProducerI.ISS_PC] = ISS_GOT
            fifo_get(pi, p, now, q)
            return
        elif pc == ISS_GOT:
            tf[TileF.ISSUE_START, i] = now
            pi[p, ProducerI.ISS_PC] = ISS_EPILOGUE
            if tf[TileF.EPILOGUE_US, i] > 0:
                timeout(q, now + tf[TileF.EPILOGUE_US, i], K_ISSUER, p)
                return
        elif pc == ISS_EPILOGUE:
            pi[p, ProducerI.ISS_PC] = ISS_ISSUED
            if tf[TileF.BYTES, i] > 0:
                pi[p, ProducerI.LAST_REMOTE], pi[p, ProducerI.EVENT] = i, i
                nbytes = tf[TileF.BYTES, i]
                inject(s.xstages, pi[p, ProducerI.GPU], pi[p, ProducerI.COLUMN], i, nbytes,
                       nbytes / tf[TileF.T_ISS0_US, i], now, q)
                return
            last = pi[p, ProducerI.LAST_REMOTE]
            if last >= 0 and ti[TileI.DRAINED, last] != DR_PROCESSED:
                pi[p, ProducerI.EVENT] = last  # a local tile completes when the producer's stores have drained
            else:
                pi[p, ProducerI.EVENT] = i
                succeed(q, now, K_DRAINED, i, 0)
                ti[TileI.DRAINED, i] = DR_SCHEDULED
        elif pc == ISS_ISSUED:
            tf[TileF.ISSUE_END, i] = now
            if ti[TileI.SIGNAL, i] >= 0 and ti[TileI.SIGNAL_ON_DRAIN, i] == 0:
                counter_signal(pi, s.counters, ti[TileI.SIGNAL, i], now, q)
            event = pi[p, ProducerI.EVENT]
            if ti[TileI.DRAINED, event] == DR_PROCESSED:
                on_drained(pi, s.counters, s.tiles, i, tf[TileF.DRAIN_END, event], q)
            else:
                _add_callback(ti, event, i)
            pi[p, ProducerI.ISS_PC] = ISS_DRAINED
            if s.coupled and ti[TileI.DRAINED, event] != DR_PROCESSED:
                return
        elif pc == ISS_DRAINED:
            pi[p, ProducerI.SLOTS] += 1  # Container.put(1): a slot is always free to return
            pi[p, ProducerI.ISS_PC] = ISS_PUT
            succeed(q, now, K_SLOT_PUT, p, 0)
            return
        else:  # ISS_PUT
            pi[p, ProducerI.ISS_PC] = ISS_START
            pi[p, ProducerI.ISS_DONE] += 1


@jit
def on_drained(producers, counters, tiles, tile, when, q):
    """run's on_drained: record the tile's drain end; signal if it signals on drain."""
    tiles.f[TileF.DRAIN_END, tile] = when
    if tiles.i[TileI.SIGNAL, tile] >= 0 and tiles.i[TileI.SIGNAL_ON_DRAIN, tile] == 1:
        counter_signal(producers, counters, tiles.i[TileI.SIGNAL, tile], when, q)


@inline
def _add_callback(ti, event, tile):
    """``drained.callbacks.append(lambda: on_drained(tile))``."""
    if ti[TileI.CB_HEAD, event] < 0:
        ti[TileI.CB_HEAD, event] = tile
    else:
        ti[TileI.CB_NEXT, ti[TileI.CB_TAIL, event]] = tile
    ti[TileI.CB_TAIL, event] = tile


@jit
def drained_processed(producers, counters, tiles, event, now, q):
    """A drained event is processed: its on_drained callbacks run in the order they were added."""
    tiles.i[TileI.DRAINED, event] = DR_PROCESSED
    tile = tiles.i[TileI.CB_HEAD, event]
    while tile >= 0:
        on_drained(producers, counters, tiles, tile, now, q)
        tile = tiles.i[TileI.CB_NEXT, tile]
