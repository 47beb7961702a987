"""Where units run: in this process, in a local pool of worker processes, or as Ray tasks.

An executor runs the groups the engine made (runner/engines.py: one unit each, or lockstep groups), one task
per group, and hands each finished unit's result back to the caller, who writes its shard, so the shards are
the same whichever executor ran them (a group is a pure function of its units' configs and seeds).

- ``LocalExecutor(jobs=1)`` runs the groups one after the other in this process.
- ``LocalExecutor(jobs=N)`` runs them in N worker processes, started once per experiment and forked
  from multiprocessing's ``forkserver`` (``spawn`` where there is none): a fresh Python, started once
  per process with one BLAS thread, that imports this module (numpy, pyarrow, pandas; no torch, see
  banditbench/lazy.py) and forks each worker warm. Not ``fork`` of the parent, which may hold threads
  (the progress bar's, torch's, BLAS's) and CUDA state that a forked child inherits broken; not
  ``spawn``, which imports everything again in every worker and tears a whole interpreter down at the
  end (≈ 1 s per run on 2 cores). The server's only other thread is pyarrow's jemalloc background
  thread, which jemalloc's own fork handlers reset in the child. The prepared dataset is sent once to
  each worker and its tables are cached there (memory-mapped Parquet), so it is loaded once per worker,
  not once per unit. BLAS and torch are limited to one thread per worker, so N workers use N cores
  instead of N × cores threads fighting for them. Results come back as Arrow tables (≈ 2 MB for
  15 000 rounds, pickled in ≈ 10 ms); the parent writes the shards while the workers run.
- ``RayExecutor`` submits the units as Ray tasks (one CPU each, ``gpus_per_unit`` GPUs if asked), to a
  local Ray started for the run or to an existing cluster (``address``). The dataset folder must be
  readable at the same path on every node (a shared file system); results come back to this process.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue as queues
import resource
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import forkserver
from typing import Any
from unittest import mock

from banditbench.algos import plugins
from banditbench.data import PreparedDataset
from banditbench.envs import BudgetExceeded
from banditbench.errors import SettingError, UserError
from banditbench.parent_death import PARENT_VARIABLE, die_with_parent
from banditbench.results.units import Unit, UnitResult
from banditbench.runner.checkpoint import Checkpoints
from banditbench.runner.unit import run_group

Finished = Callable[[Unit, UnitResult], None]
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def run_one(
    group: list[Unit], dataset: PreparedDataset, progress=None, checkpoints: Checkpoints | None = None
) -> list[UnitResult]:
    """Run a group of units (one unit, or a lockstep group: runner/engines.py); their results in order."""
    try:
        return run_group(group, dataset, progress, checkpoints)
    except BudgetExceeded as e:
        unit = group[0]
        raise UserError(f"{unit.algorithm} broke the budget in unit {unit.id}: {e}") from None


def limit_threads() -> None:
    """One BLAS / OpenMP / torch thread in this (worker) process."""
    from threadpoolctl import threadpool_limits

    for name in THREAD_VARIABLES:  # for libraries loaded later (torch reads OMP_NUM_THREADS when it starts)
        os.environ[name] = "1"
    threadpool_limits(limits=1)  # the BLAS already loaded by numpy / scipy
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Executor:
    """Runs units; used as a context manager around all the phases of one experiment, so that worker
    processes (and the dataset they hold) are started once, not once per phase."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc) -> None:
        pass

    @property
    def workers(self) -> int:
        """How many units or groups run at once: ``jobs``, or one per core where it is not set."""
        return getattr(self, "jobs", None) or os.cpu_count() or 1

    @property
    def sharing_a_gpu(self) -> int:
        """How many worker processes may use one GPU at once: a local pool's workers all see the same device."""
        return self.workers

    def describe(self) -> dict[str, Any]:
        raise NotImplementedError

    def run(
        self,
        groups: list[list[Unit]],
        dataset: PreparedDataset,
        finished: Finished,
        *,
        on_unit_start: Callable[[Unit], None] | None = None,
        progress: Callable[[int], None] | None = None,
        checkpoints: Checkpoints | None = None,
    ) -> None:
        raise NotImplementedError


# ---- local process pool ------------------------------------------------------------------------------
_worker: dict[str, Any] = {}  # per worker process: the dataset, the message queue, the checkpoints


def die_with(parent: int) -> None:
    """Make this worker process end when ``parent`` (the process running the experiment) ends, even by
    ``kill -9``, so that no worker outlives its run. On Linux the kernel kills the worker when its own parent,
    the fork server, ends, which the server does the moment ``parent`` ends (banditbench/worker_signals.py);
    a watchdog thread also ends it when ``parent`` ends, woken by a pidfd on Linux (a pool started outside the
    main thread has a fork server that outlives the run until its workers end), polling once a second
    elsewhere."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the pool's terminate() ends a worker at once, as always
    die_with_parent(signal.SIGKILL, os.getppid())

    def watch() -> None:
        try:
            handle = os.pidfd_open(parent)
        except ProcessLookupError:  # the run ended while this worker was starting
            os._exit(1)
        except (AttributeError, OSError):  # no pidfd (not Linux, or an old kernel): poll
            while True:
                time.sleep(1.0)
                try:
                    os.kill(parent, 0)
                except ProcessLookupError:
                    break
                except PermissionError:
                    pass
        else:
            select.select([handle], [], [])
        os._exit(1)

    if parent != os.getpid():
        threading.Thread(target=watch, name="banditbench-parent-watch", daemon=True).start()


def _init_worker(dataset: PreparedDataset, messages, checkpoints: Checkpoints | None, added: dict, parent: int) -> None:
    die_with(parent)
    limit_threads()
    plugins.install(added)  # algorithms registered in the parent from import paths or plugins
    _worker.update(dataset=dataset, messages=messages, checkpoints=checkpoints)
    messages.put(("ready", os.getpid()))


def _work(group: list[Unit]) -> list[tuple[Unit, UnitResult]]:
    messages = _worker["messages"]
    for unit in group:
        messages.put(("start", unit.id))
    results = run_one(group, _worker["dataset"], lambda n: messages.put(("rounds", n)), _worker["checkpoints"])
    for result in results:
        result.peak_rss_mb = peak_rss_mb()
    return list(zip(group, results))


def pool_context() -> multiprocessing.context.BaseContext:
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["banditbench.worker_signals", __name__])  # signals first: see that module
    # The server (started once per process) gets one-thread variables, so numpy's BLAS starts there without
    # a thread pool: the server stays single-threaded, which is what makes forking from it safe.
    # It is started while this process ignores SIGINT, a disposition that survives exec and that Python keeps:
    # a Ctrl-C while the server is still importing cannot interrupt it (the window here is the fork and exec).
    # From the main thread, the server is told to end with this process (the kernel's signal on the death of the
    # thread that started it must not come while the process lives on).
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    variables = {**dict.fromkeys(THREAD_VARIABLES, "1"), **({PARENT_VARIABLE: str(os.getpid())} if main else {})}
    try:
        with mock.patch.dict(os.environ, variables):
            forkserver.ensure_running()
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    return context


@contextlib.contextmanager
def deferred_interrupt():
    """Hold a Ctrl-C back until the block ends, then raise it. A worker process whose start was cut off by
    one would print a traceback (its parent gone before it got its start-up data)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: caught.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


class LocalExecutor(Executor):
    def __init__(self, jobs: int | None = None):
        self.jobs = os.cpu_count() or 1 if jobs is None else jobs
        if self.jobs < 1:
            raise SettingError("{jobs} must be at least 1, got {value}", value=self.jobs)
        self.pool = None
        self.messages = None
        self.ready = 0  # workers that have started

    def __exit__(self, *exc) -> None:
        if self.pool is None:
            return
        # shutdown() forgets its manager thread even when it does not wait for it, so hold it here: the thread
        # must have ended before the interpreter's exit hook wakes it through a pipe the thread itself closes.
        manager = getattr(self.pool, "_executor_manager_thread", None)
        if exc and exc[0] is not None:  # on an error or Ctrl-C, stop the units still running at once
            processes = list((getattr(self.pool, "_processes", None) or {}).values())
            self.pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)
        if manager is not None:
            manager.join()
        self.pool = None
        self.ready = 0

    def start(self, dataset: PreparedDataset, checkpoints: Checkpoints | None) -> None:
        # concurrent.futures rather than multiprocessing.Pool: a worker that dies (e.g. killed when out of
        # memory) fails the run with BrokenProcessPool instead of leaving it waiting forever.
        if self.pool is None:
            context = pool_context()
            self.messages = context.Queue()
            self.pool = ProcessPoolExecutor(
                self.jobs,
                mp_context=context,
                initializer=_init_worker,
                initargs=(dataset, self.messages, checkpoints, plugins.added(), os.getpid()),
            )

    def await_workers(self, timeout: float = 60.0) -> list[tuple[str, Any]]:
        """Wait until every started worker has run its initializer (a minute at most); return the other
        messages that came meanwhile, in order."""
        early = []
        deadline = time.monotonic() + timeout
        while self.ready < len(self.pool._processes) and time.monotonic() < deadline:
            try:
                message = self.messages.get(timeout=0.1)
            except queues.Empty:
                continue
            if message[0] == "ready":
                self.ready += 1
            else:
                early.append(message)
        return early

    def describe(self) -> dict[str, Any]:
        return {"backend": "local", "jobs": self.jobs}

    def run(self, groups, dataset, finished, *, on_unit_start=None, progress=None, checkpoints=None) -> None:
        if self.jobs == 1 or len(groups) <= 1:
            for group in groups:
                if on_unit_start is not None:
                    for unit in group:
                        on_unit_start(unit)
                for unit, result in zip(group, run_one(group, dataset, progress, checkpoints)):
                    finished(unit, result)
            return
        with deferred_interrupt():  # workers start inside submit: let none be cut off half-born
            self.start(dataset, checkpoints)
            futures = [self.pool.submit(_work, group) for group in groups]
            early = self.await_workers()
        messages = self.messages
        by_id = {u.id: u for group in groups for u in group}

        def drain() -> None:
            while True:
                try:
                    kind, value = early.pop(0) if early else messages.get_nowait()
                except queues.Empty:
                    return
                if kind == "start" and on_unit_start is not None:
                    on_unit_start(by_id[value])
                elif kind == "rounds" and progress is not None:
                    progress(value)

        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            drain()
            for future in done:
                for unit, result in future.result():
                    finished(unit, result)


# ---- Ray ---------------------------------------------------------------------------------------------
_datasets: dict[tuple[str, str], PreparedDataset] = {}  # per Ray worker: datasets already loaded


def _ray_task(
    group: list[Unit], dataset: PreparedDataset, checkpoints: Checkpoints | None, added: dict
) -> list[UnitResult]:
    limit_threads()
    plugins.install(added)
    dataset = _datasets.setdefault((str(dataset.path), dataset.manifest_sha256), dataset)
    results = run_one(group, dataset, None, checkpoints)
    for result in results:
        result.peak_rss_mb = peak_rss_mb()
    return results


class RayExecutor(Executor):
    def __init__(self, address: str | None = None, jobs: int | None = None, gpus_per_unit: float = 0.0):
        try:
            import ray  # noqa: F401
        except ImportError:
            raise SettingError("{backend} ray needs Ray: pip install 'banditbench-lab[ray]'") from None
        self.address = address
        self.jobs = jobs
        self.gpus_per_unit = gpus_per_unit
        self.started_here = False
        self.depth = 0  # nested `with` blocks share one Ray (e.g. a benchmark timing ray.init apart)

    @property
    def sharing_a_gpu(self) -> int:
        """Ray gives each task its own share of a GPU: 1 / ``gpus_per_unit`` tasks fit on one."""
        return int(1 / self.gpus_per_unit) if 0 < self.gpus_per_unit < 1 else 1

    def describe(self) -> dict[str, Any]:
        return {"backend": "ray", "address": self.address, "gpus_per_unit": self.gpus_per_unit}

    def __enter__(self) -> RayExecutor:
        import ray

        if self.depth == 0 and not ray.is_initialized():
            options = {"address": self.address} if self.address else {"num_cpus": self.jobs or os.cpu_count()}
            ray.init(**options, include_dashboard=False, log_to_driver=False, configure_logging=False)
            self.started_here = True
        self.depth += 1
        return self

    def __exit__(self, *exc) -> None:
        import ray

        self.depth -= 1
        if self.depth == 0 and self.started_here:
            ray.shutdown()
            self.started_here = False

    def run(self, groups, dataset, finished, *, on_unit_start=None, progress=None, checkpoints=None) -> None:
        import ray

        task = ray.remote(_ray_task).options(num_cpus=1, num_gpus=self.gpus_per_unit, max_retries=0)
        shared = ray.put(dataset)
        added = plugins.added()
        pending = {}
        for group in groups:
            pending[task.remote(group, shared, checkpoints, added)] = group
            if on_unit_start is not None:
                for unit in group:
                    on_unit_start(unit)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                group = pending.pop(ref)
                try:
                    results = ray.get(ref)
                except ray.exceptions.RayTaskError as e:
                    if isinstance(e.cause, UserError):  # the unit's own refusal, as it was raised (a SettingError too)
                        raise e.cause from None
                    raise
                except ray.exceptions.RayError as e:  # Ray lost a worker, a node or an object: not the unit's fault
                    reason = str(e).strip().splitlines()[0] if str(e).strip() else ""
                    raise UserError(
                        f"Ray lost the task running {', '.join(u.id for u in group)} ({type(e).__name__}: {reason}); "
                        "the finished units are kept: run the same command again with --resume"
                    ) from None
                for unit, result in zip(group, results):
                    if progress is not None:
                        progress(unit.rounds)
                    finished(unit, result)


def make_executor(backend: str, jobs: int | None, address: str | None = None, gpus_per_unit: float = 0.0) -> Executor:
    if backend == "local":
        if address is not None or gpus_per_unit:
            raise SettingError("{address} and {gpus_per_unit} need {backend} ray")
        return LocalExecutor(jobs)
    if backend == "ray":
        return RayExecutor(address, jobs, gpus_per_unit)
    raise UserError(f"unknown backend {backend!r}; choose from: local, ray")
