"""The load gate: a mainloop that loads memory starts only once the X-Stage has room to spare.

On the host link the fused kernels' stores are accepted at once, but the next mainloop's loads
wait behind the CTA's posted host writes (docs/fa-a2a-report.md, "Where it sits"): an accepted
store is not free for a mainloop that loads memory while the stage is full. The gate models
that: before such a mainloop starts, its producer waits until the occupancy it sees is at or
below ``threshold_bytes``:

- ``scope = "producer"``: the producer's own undrained bytes (its q in the fluid X-Stage);
- ``scope = "link"``: the whole X-Stage's undrained bytes (every producer of the source GPU);
- ``scope = "fifo"``: the bytes that were ahead of the mainloop when it began to wait: it waits
  until the stage has drained all but ``threshold_bytes`` of what it had accepted by then
  (cumulative drained >= cumulative accepted at that instant - threshold); bytes accepted later,
  by any producer, do not hold it. With nothing accepted while it waits this is scope "link".
- ``scope = "fifo-link"``: a system-scope fence, then the loads behind it: first the stage drains
  everything it had accepted when the mainloop began to wait (scope "fifo" at threshold 0: the
  fence's flush is ordered behind the posted writes ahead of it), then the mainloop waits as at a
  link-scope gate of ``threshold_bytes`` (its loads are held like any other mainloop's). With an
  infinite threshold it is the fifo fence alone (never open).

``threshold_bytes = 0`` with scope ``producer`` is "wait for my own stores to drain"; an
infinite threshold is the model without a gate. The engines apply it to the tiles of a
workload with ``mainloop_loads`` (docs/simulator.md, "Load gate").

``mode`` says when the gate holds a mainloop:

- ``"start"`` (default): only before it starts; once running it runs its full length;
- ``"stall"``: also while it runs: it progresses only while the occupancy of its scope is at or
  below the threshold, is paused (its remaining work frozen) whenever the occupancy rises above
  it, and resumes when it falls back (docs/simulator.md, "Stall mode"). Scopes producer and link
  only: a fifo gate's target is fixed when the mainloop begins to wait, so a running mainloop
  has no occupancy to stall on.

Profile JSON: ``"load_gate": {"threshold_bytes": 12345.0, "scope": "producer"}`` (absent or
null: no gate), with ``"mode": "stall"`` optional (absent: ``"start"``, written only when not).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

SCOPES = ("producer", "link", "fifo", "fifo-link")
OCCUPANCY_SCOPES = ("producer", "link", "fifo")   # one occupancy each: what a load gate is calibrated for
MODES = ("start", "stall")
STALL_SCOPES = ("producer", "link")


class LoadGateError(ValueError):
    """A load gate that is not valid (a profile turns it into a ProfileError)."""


@dataclass(frozen=True)
class LoadGate:
    """A mainloop that loads memory starts once the occupancy of ``scope`` is <= ``threshold_bytes``."""

    threshold_bytes: float
    scope: str = "producer"   # one of SCOPES
    mode: str = "start"       # one of MODES: hold a mainloop before it starts, or also while it runs

    def __post_init__(self) -> None:
        value = self.threshold_bytes
        if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value) or value < 0:
            raise LoadGateError(f'"threshold_bytes" must be a number >= 0, got {value!r}')
        object.__setattr__(self, "threshold_bytes", float(value))
        if self.scope not in SCOPES:
            raise LoadGateError(f'"scope" must be one of {", ".join(SCOPES)}, got {self.scope!r}')
        if self.mode not in MODES:
            raise LoadGateError(f'"mode" must be one of {", ".join(MODES)}, got {self.mode!r}')
        if self.mode == "stall" and self.scope not in STALL_SCOPES:
            raise LoadGateError(f'"mode" stall needs scope {" or ".join(STALL_SCOPES)}, got {self.scope!r} '
                                '(a fifo target is fixed when the mainloop begins to wait)')

    @property
    def is_open(self) -> bool:
        """An infinite threshold: no mainloop ever waits (the model without a gate); a fifo-link
        gate's fence holds at any threshold."""
        return self.threshold_bytes == math.inf and self.scope != "fifo-link"

    @property
    def stalls(self) -> bool:
        """Mode stall: a running mainloop is paused while the occupancy is above the threshold."""
        return self.mode == "stall"

    def to_dict(self) -> dict[str, Any]:
        """The profile's object; ``mode`` only when not the default (start-mode profiles unchanged)."""
        out: dict[str, Any] = {"threshold_bytes": self.threshold_bytes, "scope": self.scope}
        return {**out, "mode": self.mode} if self.mode != "start" else out


def gate_to_json(gate: LoadGate | None) -> dict[str, Any] | None:
    """A profile's ``load_gate`` value: null without a gate, and for an infinite threshold (JSON
    has no infinity; the two simulate alike)."""
    return None if gate is None or gate.is_open else gate.to_dict()


def gate_from_json(value: Any) -> LoadGate | None:
    """A profile's ``load_gate`` value (absent or null: None)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise LoadGateError(f'"load_gate" must be an object or null, got {type(value).__name__}')
    unknown = sorted(set(value) - {"threshold_bytes", "scope", "mode"})
    if unknown:
        raise LoadGateError(f'"load_gate" has an unknown key {unknown[0]!r}; known: mode, scope, threshold_bytes')
    if "threshold_bytes" not in value:
        raise LoadGateError('"load_gate" is missing the key \'threshold_bytes\'')
    return LoadGate(value["threshold_bytes"], value.get("scope", "producer"), value.get("mode", "start"))


def with_gate(gate: LoadGate | None, threshold_bytes: float | None = None, scope: str | None = None,
              mode: str | None = None) -> LoadGate | None:
    """``gate`` with a command-line threshold, scope and/or mode (a scope or mode alone needs a gate
    to apply to)."""
    if threshold_bytes is None and scope is None and mode is None:
        return gate
    if threshold_bytes is None and gate is None:
        what = "scope" if scope is not None else "mode"
        raise LoadGateError(f"a load gate {what} needs a threshold: the platform has no load gate")
    return LoadGate(gate.threshold_bytes if threshold_bytes is None else threshold_bytes,
                    scope or (gate.scope if gate is not None else "producer"),
                    mode or (gate.mode if gate is not None else "start"))
