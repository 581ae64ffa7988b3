"""Tuning trials as Dask tasks: on a ``LocalCluster`` of worker processes, or on a running
cluster named by its scheduler's address (``tcp://host:8786``, or ``PYPTO_DASK_SCHEDULER``).

Dask is optional (``pip install "pypto-lang[tune]"``); without it :func:`make_executor` runs the
sweep serially in this process, with the same results. A worker needs only the packages
installed: each task carries the parsed program of one configuration (plain IR data), not the
kernel's source. The arguments are scattered to the workers once per sweep. Results stream back
as they finish. A task whose worker dies is run once more; if that worker dies too, the trial is
recorded as failed and the sweep goes on.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import logging
import os
import threading
import uuid
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

# A Dask worker process imports only this module to run a trial: importing the language registers
# its parser as the reader of pass dumps, which RunConfig(verification_level=ROUNDTRIP) needs.
import pypto.language  # noqa: F401
from pypto.ir.tracebacks import call_site
from pypto.tuning.sweep import FAILED, SerialExecutor, Trial, TrialJob, TuneError, TuneWarning, run_trial

SCHEDULER_ENV = "PYPTO_DASK_SCHEDULER"
WORKERS_ENV = "PYPTO_TUNE_WORKERS"
INSTALL_HINT = 'install Dask with `pip install "pypto-lang[tune]"` (or `pip install "dask[distributed]"`)'


def dask_installed() -> bool:
    return importlib.util.find_spec("distributed") is not None


def machine_workers() -> int:
    """Worker processes for a local cluster sized to the machine: one per usable core."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _remote_trial(job: TrialJob, *args: Any) -> Trial:
    """A trial on a Dask worker (the worker's address recorded in it)."""
    trial = run_trial(job, args)
    try:
        from distributed import get_worker

        trial.where = get_worker().address
    except ValueError:  # not on a worker (a client running tasks in-process)
        pass
    return trial


class DaskExecutor:
    """Runs trials as Dask tasks: on the cluster at ``address``, else on a ``LocalCluster`` of
    ``workers`` processes (one thread each), started by the first sweep that asks for that many and
    kept for the later sweeps of the process (see :func:`shared_local_client`); or on the cluster
    of an existing ``client``."""

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        client: Any = None,
        origin: str = "scheduler=",
    ) -> None:
        self.address = address
        self.origin = origin  # where the address came from, for the error when it cannot be reached
        self.workers = workers or machine_workers()
        self.client = client

    @property
    def name(self) -> str:
        if self.client is not None:
            return f"Dask cluster at {self.client.scheduler.address}"
        if self.address is not None:
            return f"Dask cluster at {self.address}"
        return f"Dask LocalCluster, {self.workers} worker process(es)"

    def run(self, jobs: Sequence[TrialJob], args: Sequence[Any]) -> Iterator[Trial]:
        if self.client is not None:
            yield from _run_on(self.client, jobs, args)
            return
        from distributed import Client

        if self.address is not None:
            try:
                client = Client(self.address, timeout="10s")
            except (OSError, TimeoutError) as exc:
                raise TuneError(
                    f"cannot reach the Dask scheduler at {self.address}: {exc}",
                    hint=f"start one (`dask scheduler`, then `dask worker {self.address}` on each machine), "
                    f"or fix {self.origin}; without it the sweep runs on a local cluster",
                ) from None
            with client:
                yield from _run_on(client, jobs, args)
            return
        yield from _run_on(shared_local_client(self.workers), jobs, args, one_per_worker=True)


_shared: dict[int, local_client] = {}
_shared_lock = threading.Lock()


def shared_local_client(workers: int) -> Any:
    """The client of this process's ``LocalCluster`` of ``workers`` processes: started on first
    use (about 2 s: the workers import torch and the packages), then kept, so that a later sweep
    (another key of a tuned kernel, another kernel) starts at once; stopped when the process
    exits. A cluster that stopped meanwhile is started again."""
    with _shared_lock:
        kept = _shared.get(workers)
        if kept is not None and kept.client.status == "running" and kept.cluster.status.name == "running":
            return kept.client
        if kept is not None:
            kept.__exit__()
        if not _shared:
            atexit.register(_stop_shared)
        started = local_client(workers)
        started.__enter__()
        _shared[workers] = started
        return started.client


def _stop_shared() -> None:
    with _shared_lock:
        for kept in _shared.values():
            with contextlib.suppress(Exception):  # the interpreter is going down: a half-gone cluster is fine
                kept.__exit__()
        _shared.clear()


class local_client:
    """A ``LocalCluster`` of ``workers`` worker processes (one thread each, no dashboard) and a
    client of it; a task whose worker dies is not rerun by the scheduler (the executor reruns it
    once itself)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def __enter__(self) -> Any:
        import dask
        from distributed import Client, LocalCluster

        # A task whose worker dies fails at once (the executor reruns it once), and the executor
        # hands the cluster no more trials than it has workers (see _run_on), so a dying worker
        # takes no queued trial with it.
        # A simulation's Python stack is deep: Dask's sampling profiler (every 10 ms) and the
        # nanny's malloc trimming slow a trial by about a fifth (benchmarks/README.md), so both are
        # off; the workers keep one BLAS/OpenMP thread each, as the nanny sets by default. A trial
        # holds the GIL throughout, and each wake-up of the worker's event loop takes it away: the
        # loop's health tick (every 20 ms by default) and its memory and system monitors wake it
        # once a second here, which makes a trial some 5% faster.
        settings = {
            "distributed.scheduler.allowed-failures": 0,
            "distributed.scheduler.worker-saturation": 1.0,
            "distributed.worker.profile.enabled": False,
            "distributed.admin.tick.interval": "1s",
            "distributed.worker.memory.monitor-interval": "1s",
            "distributed.admin.system-monitor.interval": "1s",
            "distributed.nanny.pre-spawn-environ": {
                "OMP_NUM_THREADS": 1,
                "MKL_NUM_THREADS": 1,
                "OPENBLAS_NUM_THREADS": 1,
            },
        }
        with dask.config.set(settings):
            try:
                self.cluster = LocalCluster(
                    n_workers=self.workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                )
            except Exception as exc:  # most often: spawned workers import an unguarded script again
                raise TuneError(
                    f"the local Dask cluster of {self.workers} worker processes did not start: "
                    f"{type(exc).__name__}: {exc}",
                    call_site(),
                    hint="a script that sweeps on local workers must call the kernel under `if __name__ == "
                    '"__main__":` (each worker process imports the script again); or sweep in this '
                    "process with workers=0",
                ) from None
        self.client = Client(self.cluster)
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        self.cluster.close()


def _run_on(
    client: Any, jobs: Sequence[TrialJob], args: Sequence[Any], one_per_worker: bool = False
) -> Iterator[Trial]:
    """Run the trials on ``client``'s cluster, yielding each as it finishes. ``one_per_worker``: no
    more trials at a time than the cluster has worker threads, the next one handed over as one
    finishes, so that each worker holds only the trial it runs (the scheduler sends a task with
    inputs, here the scattered arguments, to a worker at once, to wait there behind others, and a
    worker that dies takes those along: each would then run again, and fail if its rerun met a
    dying worker too)."""
    from distributed import as_completed

    if not jobs:
        return
    scattered = [client.scatter(list(args), broadcast=True) if args else []]
    sweep = uuid.uuid4().hex[:8]

    def submit(job: TrialJob, attempt: int) -> Any:
        if attempt and any(future.status != "finished" for future in scattered[0]):
            scattered[0] = client.scatter(list(args), broadcast=True)  # the dead workers held the last copy
        key = f"pypto-trial-{sweep}-{job.index}-{attempt}"
        return client.submit(_remote_trial, job, *scattered[0], key=key, pure=False)

    waiting = list(jobs)
    at_once = max(1, sum(client.nthreads().values())) if one_per_worker else len(waiting)
    pending = {submit(job, 0): (job, 0) for job in waiting[:at_once]}
    del waiting[:at_once]
    finished = as_completed(list(pending))
    for future in finished:
        job, attempt = pending.pop(future)
        try:
            trial = future.result()
        except Exception as exc:  # the worker died (KilledWorker), or the task could not run there
            if attempt == 0:
                retry = submit(job, 1)
                pending[retry] = (job, 1)
                finished.add(retry)
                continue
            trial = Trial(
                job.index,
                job.config,
                FAILED,
                message=f"{type(exc).__name__}: run twice, and its worker died both times ({exc})",
            )
        if waiting:  # its worker is free: the next trial
            following = waiting.pop(0)
            handed = submit(following, 0)
            pending[handed] = (following, 0)
            finished.add(handed)
        yield trial


def make_executor(
    workers: int | None = None, scheduler: str | None = None, default_workers: int | None = None
) -> Any:
    """The executor a sweep runs on.

    - ``scheduler``: the Dask cluster at that address;
    - else ``workers`` of 2 or more: a ``LocalCluster`` of that many worker processes; 0 or 1:
      serially in this process (a count given here beats a cluster named in the environment);
    - else ``PYPTO_DASK_SCHEDULER``, else ``PYPTO_TUNE_WORKERS``, else ``default_workers``.

    Without Dask installed, a named scheduler is an error and a local cluster a warning (the sweep
    runs serially, with the same results).
    """
    origin = "scheduler="
    if scheduler is None and workers is None and os.environ.get(SCHEDULER_ENV):
        scheduler, origin = os.environ[SCHEDULER_ENV], SCHEDULER_ENV
    if scheduler is not None:
        if not dask_installed():
            raise TuneError(
                f"a Dask scheduler was named ({scheduler}), but Dask is not installed", hint=INSTALL_HINT
            )
        return DaskExecutor(address=scheduler, origin=origin)
    if workers is None:
        workers = _env_workers()
    if workers is None:
        workers = default_workers
    if workers is None or workers <= 1:
        return SerialExecutor()
    if not dask_installed():
        warnings.warn(
            f"Dask is not installed, so the sweep runs serially in this process instead of on {workers} "
            f"workers; {INSTALL_HINT}",
            TuneWarning,
            stacklevel=3,
        )
        return SerialExecutor()
    return DaskExecutor(workers=workers)


def _env_workers() -> int | None:
    value = os.environ.get(WORKERS_ENV)
    if not value:
        return None
    try:
        workers = int(value)
    except ValueError:
        raise TuneError(
            f"{WORKERS_ENV}={value!r} is not a number of workers",
            hint=f"set {WORKERS_ENV}=0 to tune serially, or to the number of Dask worker processes",
        ) from None
    if workers < 0:
        raise TuneError(f"{WORKERS_ENV}={value!r} is negative", hint=f"set {WORKERS_ENV}=0 or more")
    return workers


__all__ = [
    "INSTALL_HINT",
    "SCHEDULER_ENV",
    "WORKERS_ENV",
    "DaskExecutor",
    "dask_installed",
    "local_client",
    "machine_workers",
    "make_executor",
    "shared_local_client",
]
