"""Executors: one picklable, module-level function mapped over many items, in this process, on a
pool of local processes or on a Dask cluster; ``(index, result)`` pairs come back as the items
complete (any order), so a caller can write each result as soon as it exists.

* ``local`` (the default): :class:`concurrent.futures.ProcessPoolExecutor` with the *spawn* start
  method and ``jobs`` workers (default: the cores this process may use). A spawned worker imports
  teg afresh and loads the numba functions from their on-disk cache (``@njit(cache=True)``,
  ``__pycache__`` beside the modules), so nothing compiles twice: items run in the calling
  process first — the first one compiles a cold cache there, once, and every worker then finds
  it — and go on running there until ``head_s`` seconds have passed (starting workers costs
  about that: a small application never waits for a pool); the rest go to the pool. One job
  runs everything in the calling process.
* ``dask``: the same function through Dask's own API — :meth:`distributed.Client.map` and
  :func:`distributed.as_completed` — on the cluster at ``scheduler`` (``tcp://HOST:8786``), or on a
  :class:`distributed.LocalCluster` of ``jobs`` single-threaded workers when none is given (its
  head, too, runs here first). The workers of a remote cluster must see the trace files
  at the same paths (a shared file system) and have teg installed.

Worker processes start with glibc's malloc told to keep freed memory (:data:`WORKER_MALLOC_ENV`,
mallopt(3) variables, read when a process starts; for a LocalCluster through Dask's
``distributed.nanny.pre-spawn-environ``): the engine allocates its whole-GPU state (tens of MB)
afresh for every run, and with glibc's defaults a young process hands it back to the OS after each
run and page-faults it in again — measured here, about 90,000 minor faults for one kernel's what-ifs
and 20 times the time the same kernel takes in a long-lived process. Variables the user has set win.

Workers never outlive the process that started them, and never print on Ctrl-C: each worker of the
local pool is started with SIGINT ignored (the terminal's Ctrl-C goes to the whole process group; the
calling process alone handles it, stopping the pool's workers at once and exiting with one line),
asks the kernel to kill it when its parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``) and watches
its parent's PID (every :data:`PARENT_POLL_S`, where there is no ``prctl``): a parent killed with
SIGKILL, which can run no clean-up of its own, takes its workers with it.

Results do not depend on the executor: each item is computed by the same function from the same
inputs, and the engine is deterministic. A progress bar (tqdm, extra ``progress``) counts the
items on stderr when stderr is a terminal; it is silent otherwise, and absent without tqdm.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from teg import TegError

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

EXECUTORS = ("local", "dask")
PARENT_POLL_S = 0.5     # how often a worker checks that its parent still runs
HEAD_S = 1.0        # seconds of items run in the calling process before a pool starts
WORKER_MALLOC_ENV = {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)}


class ExecutorError(TegError):
    """An executor that cannot be used: a bad setting, dask missing, a scheduler out of reach."""


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Executor:
    """Where the items run: ``kind`` ``local`` or ``dask``; ``jobs`` local processes or
    LocalCluster workers (None: :func:`usable_cores`); ``scheduler`` a Dask scheduler address;
    ``processes`` False runs a LocalCluster's workers as threads of this process (tests);
    ``head_s`` how long items run in this process before a local pool or LocalCluster takes the
    rest (the first item always runs here)."""

    kind: str = "local"
    jobs: int | None = None
    scheduler: str | None = None
    processes: bool = True
    head_s: float = HEAD_S

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise ExecutorError(f"executor {self.kind!r}: expected one of {', '.join(EXECUTORS)}")
        if self.jobs is not None and int(self.jobs) < 1:
            raise ExecutorError(f"--jobs {self.jobs}: must be at least 1")
        if self.scheduler is not None and self.kind != "dask":
            raise ExecutorError("--scheduler names a Dask scheduler: use it with --executor dask")

    @property
    def workers(self) -> int:
        return int(self.jobs) if self.jobs is not None else usable_cores()

    def run(self, fn: Callable[[Any], Any], items: Sequence, desc: str | None = None) -> Iterator[tuple[int, Any]]:
        """``(i, fn(items[i]))`` for every item, in completion order; ``desc`` labels a progress bar."""
        items = list(items)
        bar = progress_bar(len(items), desc) if desc and items else None
        try:
            if self.kind == "dask":
                results = _dask(fn, items, self.workers, self.scheduler, self.processes, self.head_s)
            else:
                results = _local(fn, items, self.workers, self.head_s)
            for pair in results:
                if bar is not None:
                    bar.update(1)
                yield pair
        finally:
            if bar is not None:
                bar.close()

    def map(self, fn: Callable[[Any], Any], items: Sequence, desc: str | None = None) -> list:
        """``[fn(x) for x in items]``, computed by :meth:`run`."""
        out: list = [None] * len(items)
        for i, r in self.run(fn, items, desc):
            out[i] = r
        return out


def progress_bar(total: int, desc: str):
    """A tqdm bar over ``total`` items on stderr, disabled when stderr is not a terminal; None
    without tqdm (the optional extra ``progress``)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, leave=False, disable=None, file=sys.stderr, dynamic_ncols=True)


@contextlib.contextmanager
def worker_environ(env: dict[str, str]):
    """``env`` in ``os.environ`` while processes are started (for them to inherit), then the
    environment as it was; a variable the user has set is left as it is."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update({k: v for k, v in env.items() if saved[k] is None})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# Tasks sent to workers carry several items each: a task costs about 1 ms in the process pool and
# several in Dask (pickling, scheduling, the result's trip back), as much as a small kernel's whole
# estimate. Each worker still gets about CHUNKS_PER_WORKER tasks, so uneven items balance out.
CHUNKS_PER_WORKER = 8
MAX_CHUNK = 32


def chunks(start: int, stop: int, workers: int) -> Iterator[tuple[int, int]]:
    """``[a, b)`` spans covering ``start..stop`` in order: about ``CHUNKS_PER_WORKER`` per worker,
    each of 1 to ``MAX_CHUNK`` items."""
    n = stop - start
    size = max(1, min(MAX_CHUNK, n // max(1, workers * CHUNKS_PER_WORKER)))
    for a in range(start, stop, size):
        yield a, min(a + size, stop)


def _run_chunk(fn, items: Sequence) -> list:
    """One worker task: ``fn`` over a span of items, in order."""
    return [fn(item) for item in items]


def _head(fn, items: list, seconds: float, out: list) -> int:
    """Run items here — at least the first (a cold numba cache compiles once, before any worker
    starts), then more until ``seconds`` have passed; their pairs go to ``out``. Returns how many ran."""
    t0 = time.perf_counter()
    n = 0
    while n < len(items) and (n == 0 or time.perf_counter() - t0 < seconds):
        out.append((n, fn(items[n])))
        n += 1
    return n


def _die_with_parent(parent: int) -> None:
    """Worker start-up (module docstring): ignore Ctrl-C, die when the parent ``parent`` does."""
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)            # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:                            # the parent died before the prctl took hold
        os._exit(1)

    def watch():
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="teg-parent-watch", daemon=True).start()


@contextlib.contextmanager
def sigint_ignored():
    """SIGINT ignored while worker processes are started: an ignored signal stays ignored across
    ``exec``, so a Ctrl-C that reaches a worker while it is still importing (before its
    initializer runs) does nothing there instead of printing a traceback. The calling process
    gets its own Ctrl-C handling back at once (only the main thread can change it)."""
    import signal

    try:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:                  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's worker processes now (an interrupted run does not wait for their tasks), and
    let the process exit without flushing the tasks still queued for them: the pool's call queue
    is a pipe whose reading end this process also holds, so its feeder thread, blocked writing a
    task larger than the pipe's buffer to workers that are gone, would never finish, and the
    interpreter's exit joins it (``multiprocessing.Queue.cancel_join_thread``)."""
    queue = getattr(pool, "_call_queue", None)
    if queue is not None:
        try:
            queue.cancel_join_thread()
        except (OSError, AttributeError, ValueError):
            pass
    procs = getattr(pool, "_processes", None) or {}
    for p in list(procs.values()):
        try:
            p.kill()
        except (OSError, AttributeError, ValueError):
            pass
    for p in list(procs.values()):
        try:
            p.join(5)
        except (OSError, AttributeError, ValueError, AssertionError):
            pass


def completed(futures) -> Iterator:
    """The local pool's futures as they finish (``concurrent.futures.as_completed``): the parent's
    wait for results, a function of this module's own so that the interrupt tests pause exactly
    there (patching ``concurrent.futures.as_completed`` would pause whatever else calls it first)."""
    from concurrent.futures import as_completed

    return as_completed(futures)


def _local(fn, items: list, jobs: int, head_s: float) -> Iterator[tuple[int, Any]]:
    import multiprocessing      # here, not at the top: a command that runs one kernel never starts a pool
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    if jobs <= 1:
        for i, item in enumerate(items):
            yield i, fn(item)
        return
    done: list = []
    first = _head(fn, items, head_s, done)
    yield from done
    if first == len(items):
        return
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(items) - first),
                               mp_context=multiprocessing.get_context("spawn"),
                               initializer=_die_with_parent, initargs=(os.getpid(),))
    finished = False
    try:
        with worker_environ(WORKER_MALLOC_ENV), sigint_ignored():    # spawn starts the workers at the submits
            futures = {pool.submit(_run_chunk, fn, items[a:b]): a for a, b in chunks(first, len(items), jobs)}
        for fut in completed(futures):
            yield from enumerate(fut.result(), futures[fut])
        finished = True
    except BrokenProcessPool:
        raise ExecutorError("a worker process died (killed, or out of memory?); the results so far were kept "
                            "only where they were written (sweep -o)") from None
    finally:
        manager = getattr(pool, "_executor_manager_thread", None)     # shutdown() forgets it
        if not finished:                               # interrupted (Ctrl-C, an error, a closed generator)
            stop_workers(pool)
        pool.shutdown(wait=finished, cancel_futures=True)
        if not finished and manager is not None:
            settle_manager(manager)


def settle_manager(thread, timeout: float = 5.0) -> None:
    """Wait (at most ``timeout`` s) for a pool's manager thread to finish after its workers were
    killed. At the interpreter's exit ``concurrent.futures`` wakes every manager thread still
    registered by writing to its wake-up pipe, unguarded against the thread closing that pipe at
    the same moment (Python 3.11): a Ctrl-C could then end with "Exception ignored ... OSError:
    [Errno 9] Bad file descriptor" after ``teg: interrupted``. Once the thread has finished, the
    pipe is marked closed and the exit's wake-up does nothing."""
    try:
        thread.join(timeout)
    except RuntimeError:                               # never started
        pass


def _dask(fn, items: list, jobs: int, scheduler: str | None, processes: bool,
          head_s: float) -> Iterator[tuple[int, Any]]:
    try:
        from distributed import Client, KilledWorker, LocalCluster
        from distributed import as_completed as dask_completed
    except ImportError:
        raise ExecutorError("--executor dask needs dask.distributed: pip install 'teg[dask]'") from None
    if not items:
        return
    cluster = None
    if scheduler is None:
        done: list = []
        first = _head(fn, items, head_s, done)     # as for the local pool
        yield from done
        if first == len(items):
            return
        import dask

        spawn_env = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **WORKER_MALLOC_ENV}
        with worker_environ(WORKER_MALLOC_ENV), dask.config.set({"distributed.nanny.pre-spawn-environ": spawn_env}):
            cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=processes,
                                   dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler, timeout=30)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ExecutorError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
        first = 0
    try:
        spans = list(chunks(first, len(items), jobs))
        futures = client.map(functools.partial(_run_chunk, fn), [items[a:b] for a, b in spans], pure=False)
        index = {f.key: a for f, (a, _) in zip(futures, spans)}
        for fut in dask_completed(futures):
            yield from enumerate(fut.result(), index[fut.key])
    except KilledWorker as exc:
        raise ExecutorError(f"Dask workers died running {exc.args[0] if exc.args else 'a task'} (killed, or out of "
                            "memory?)") from None
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
