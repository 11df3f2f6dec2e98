"""Host memory: how much this process may still allocate, and refusing up front work that would
not fit — one line naming the memory the work needs, what limits it, and the option that makes
the work smaller — instead of a ``MemoryError`` traceback (or the kernel's OOM killer) hours later.

What is available is the least of (each where the system has it):

* ``MemAvailable`` of ``/proc/meminfo`` — what the kernel can hand out without swapping;
* the cgroup's limit (v2 ``memory.max`` or v1 ``memory.limit_in_bytes``) less its usage — a
  container's or a batch job's memory limit;
* the address-space limit (``RLIMIT_AS``, ``ulimit -v``) less this process's mapped size
  (``/proc/self/statm``; memory-mapped trace columns count there).

Work sizes are estimates in bytes from the counts a stage knows before it allocates (rows,
memory transactions, addresses, warp slots × registers: :data:`LOWER_ROW_BYTES` …), measured with
``tracemalloc`` and ``/proc/self/status`` on the bundled kernel's blocks repeated 250 times
(896,000 rows): the lowering's peak 60 bytes a row, the profile of ``teg compare`` 225; the
engine's scoreboards and cache tags from their array shapes. They err on the high side (the whole
GPU run of 537,600 rows was estimated at 119 MiB and fit in 80). ``TEG_MEMORY_LIMIT`` (bytes, or
with a K/M/G suffix) caps what one piece of work may use further (shared machines, tests).
"""

from __future__ import annotations

import os
import resource

from teg import TegError

# Peak bytes per unit of the lowering (teg.engine.lower), its result included, plus the engine
# run's own per-row state; and what recording a timeline adds (teg.engine.records: 10 float64
# per row, 8 per transaction).
LOWER_ROW_BYTES = 64                   # measured 60 (tracemalloc peak of lower(), its result included)
LOWER_TX_BYTES = 24
LOWER_GATHERED_ADDRESS_BYTES = 16      # addresses of rows gathered out of order (sampled SMs, sweeps)
RUN_ROW_BYTES = 16
ENGINE_ENTRY_BYTES = 32                # the engine's per-slot register scoreboards, per register
CACHE_LINE_STATE_BYTES = 16            # the engine's cache models, per line
TIMELINE_ROW_BYTES = 80 + 40           # the records and the events' arrays built from them
TIMELINE_TX_BYTES = 64 + 16
EMU_ROW_BYTES = 120                    # teg.emu: the record (16 B/row) and the trace built from it
EMU_ADDRESS_BYTES = 24
PROFILE_ROW_BYTES = 240                # teg.models.profile: per-row classification and counts (225 measured)


class MemoryBudgetError(TegError):
    """Work that needs more memory than this process may use."""


def size_text(n: float) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{int(n)} bytes"


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _read_int(path: str) -> int | None:
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_available() -> int | None:
    """The cgroup's memory limit less its usage (v2, then v1), None when unlimited or unknown."""
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[0] == "0" and parts[1] == "":
            base = "/sys/fs/cgroup" + parts[2].rstrip("/")
            limit, used = _read_int(base + "/memory.max"), _read_int(base + "/memory.current")
            if limit is not None and used is not None:
                return max(0, limit - used)
        if len(parts) == 3 and "memory" in parts[1].split(","):
            base = "/sys/fs/cgroup/memory" + parts[2].rstrip("/")
            limit, used = _read_int(base + "/memory.limit_in_bytes"), _read_int(base + "/memory.usage_in_bytes")
            if limit is not None and used is not None and limit < 1 << 60:
                return max(0, limit - used)
    return None


def _mapped_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _address_space_available() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    mapped = _mapped_bytes()
    return max(0, soft - mapped) if mapped is not None else soft


def parse_size(text: str) -> int:
    t = text.strip().upper().rstrip("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    return int(float(t[:-1] if scale > 1 else t) * scale)


def available() -> tuple[int, str] | None:
    """(bytes this process may still allocate, what limits it), None when nothing is known."""
    found = []
    for value, what in ((_meminfo_available(), "the memory the system has available"),
                        (_cgroup_available(), "what the cgroup's memory limit leaves"),
                        (_address_space_available(), "what the address-space limit (ulimit -v) leaves")):
        if value is not None:
            found.append((value, what))
    env = os.environ.get("TEG_MEMORY_LIMIT")
    if env:
        try:
            limit = parse_size(env)
        except (ValueError, IndexError):
            raise MemoryBudgetError(f"TEG_MEMORY_LIMIT={env!r}: expected bytes, or a number with K, M or G") from None
        found.append((limit, f"TEG_MEMORY_LIMIT={env}"))
    return min(found) if found else None


def require(nbytes: int, work: str, smaller: str) -> None:
    """Refuse ``work`` (what would run) when it needs more than :func:`available`: one line with
    the memory needed, what limits it and ``smaller`` (how to make the work smaller)."""
    got = available()
    if got is None or nbytes <= got[0]:
        return
    raise MemoryBudgetError(f"{work} needs about {size_text(nbytes)} of memory, more than the {size_text(got[0])} "
                            f"available ({got[1]}); {smaller}")


LOWER_ROW_BYTES_AFTER_COUNT = 8       # per-row arrays the lowering still allocates once transactions are counted


def lowering_bytes(rows: int, transactions: int, gathered_addresses: int = 0, timeline: bool = False,
                   counted: bool = False) -> int:
    """Peak bytes of lowering ``rows`` rows and running the engine on them (:data:`LOWER_ROW_BYTES` …);
    ``counted``: only what is still to be allocated once the transactions are counted."""
    row = LOWER_ROW_BYTES_AFTER_COUNT if counted else LOWER_ROW_BYTES
    need = rows * (row + RUN_ROW_BYTES) + transactions * LOWER_TX_BYTES
    need += 0 if counted else gathered_addresses * LOWER_GATHERED_ADDRESS_BYTES
    if timeline:
        need += rows * TIMELINE_ROW_BYTES + transactions * TIMELINE_TX_BYTES
    return need
