"""The sweep's dask.distributed executor: the same points and rows as local processes, on a cluster.

``--scheduler ADDRESS`` uses a running dask scheduler; ``--scheduler local:N`` starts a
``LocalCluster`` of N worker processes for the command and stops it after. Everything but the
executor is :func:`xsim.sweep.run_sweep`'s: it decides the points, writes the rows (the row
store) and resumes. Here:

- the scenario, platform and engine are scattered once to every worker, and each worker
  sets itself up once (not per point);
- points go out in chunks, a few per worker (:func:`chunk_size`), so every worker stays busy
  while the per-task cost of the scheduler is shared by several points;
- rows come back chunk by chunk as chunks finish, in any order. A chunk whose worker dies is
  run again by the scheduler on another worker; a point that comes back twice is written
  once (the caller drops rows it already has);
- a return, an error or an interrupt cancels what is left and closes the client (and the
  cluster it started): nothing is left running.

``distributed`` is the optional extra ``cluster`` (``pip install ".[cluster]"``).
"""

from __future__ import annotations

import hashlib
import logging
import math
import pickle
import signal
import threading
from typing import Iterator

from xsim.params import ParamError

CONNECT_TIMEOUT_S = 5
CHUNKS_PER_WORKER = 8        # enough queued work per worker to hide the scheduler's latency
MAX_CHUNK = 32


def parse_scheduler(text: str) -> tuple[str, int | str]:
    """``'local:2'`` -> ``('local', 2)``; an address -> ``('address', text)``."""
    text = text.strip()
    if text.startswith("local:"):
        count = text.partition(":")[2]
        if not count.isdigit() or not 1 <= int(count) <= 1024:
            raise ParamError(f"--scheduler local:N needs N in 1..1024 worker processes, got {text!r}")
        return "local", int(count)
    if not text or any(c.isspace() for c in text):
        raise ParamError(f"--scheduler expects local:N or a scheduler address (tcp://HOST:PORT), got {text!r}")
    return "address", text


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ParamError("--scheduler needs dask's distributed package, the optional extra 'cluster': "
                         "pip install 'xstage[cluster]'") from None
    return distributed


def chunk_size(points: int, workers: int) -> int:
    """Points per task: about CHUNKS_PER_WORKER tasks per worker, at most MAX_CHUNK points each."""
    return max(1, min(MAX_CHUNK, math.ceil(points / max(1, workers * CHUNKS_PER_WORKER))))


def run_chunk(setup: tuple, token: str, points: list[dict]) -> list[dict]:
    """On a worker: set up once per sweep (the scattered setup), then one row per point."""
    from xsim import sweep

    if sweep._WORKER.get("token") != token:
        sweep.init_worker(*setup)
        sweep._WORKER["token"] = token
    return [sweep.run_point(p) for p in points]


def _ignore_ctrl_c(distributed):
    """A dask worker plugin: a worker of a LocalCluster ignores Ctrl-C (the command stops it)."""

    class IgnoreCtrlC(distributed.WorkerPlugin):
        name = "xsim-ignore-ctrl-c"

        def setup(self, worker) -> None:
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)

    return IgnoreCtrlC()


def _local_cluster(distributed, workers: int):
    """A LocalCluster whose worker processes ignore SIGINT: Ctrl-C reaches the whole process
    group, and the workers must end by the command's close, not by a KeyboardInterrupt."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None  # inherited by the spawns
    try:
        return distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                        dashboard_address=None, silence_logs=logging.CRITICAL)
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


def connect(scheduler: str):
    """(client, cluster or None): a client of the running scheduler, or of a LocalCluster started here."""
    distributed = _distributed()
    kind, value = parse_scheduler(scheduler)
    for name in ("distributed", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL)  # their warnings are not the CLI's lines
    if kind == "local":
        cluster = _local_cluster(distributed, value)
        try:
            client = distributed.Client(cluster)
            client.register_plugin(_ignore_ctrl_c(distributed))  # also for a worker the nanny restarts
            return client, cluster
        except BaseException:
            cluster.close()
            raise
    try:
        return distributed.Client(value, timeout=CONNECT_TIMEOUT_S), None
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        reason = " ".join(str(exc).split()) or exc.__class__.__name__
        raise ParamError(f"cannot reach the dask scheduler at {value}: {reason}") from None


class DaskExecutor:
    """A connection to a dask cluster for one sweep: :meth:`results`, then :meth:`close`."""

    def __init__(self, scheduler: str):
        self.scheduler = scheduler
        self.client, self.cluster = connect(scheduler)  # before any file is touched: fails in one line

    @property
    def workers(self) -> int:
        return max(1, len(self.client.scheduler_info(n_workers=-1).get("workers", {})))

    def results(self, points: list[dict], init_args: tuple) -> Iterator[dict]:
        """Rows as chunks finish (any order); what is left is cancelled when this generator ends."""
        if not points:
            return
        distributed = _distributed()
        setup = self.client.scatter(init_args, broadcast=True, hash=False)
        token = hashlib.sha256(pickle.dumps(init_args)).hexdigest()[:16]
        size = chunk_size(len(points), self.workers)
        chunks = [points[i:i + size] for i in range(0, len(points), size)]
        futures = [self.client.submit(run_chunk, setup, token, chunk, pure=False) for chunk in chunks]
        try:
            for future in distributed.as_completed(futures, loop=self.client.loop):  # this client's loop
                yield from future.result()
        finally:
            self.client.cancel(futures)

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()
