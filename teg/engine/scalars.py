"""The engine's scalars, declared once: the machine, configuration and switch values one run of the
jitted loop reads besides its arrays.

:data:`SCALARS` is the ordered declaration, one ``(name, kind, default, meaning)`` per value (no
default: every encoding must give it);
:class:`Scalars` (a named tuple numba takes as it is: each field one typed value in the loop) is
generated from it, and :func:`scalars` is the one encoder that builds one — from
:func:`teg.engine.lower.lower` and from the hand builder :func:`teg.engine.handmade.make_input`
alike — coercing every value to its declared kind, so that every run has the same numba type (one
compiled loop). The sixteen mechanism switches are the names of
:data:`teg.engine.options.MECHANISMS`, in its order, each ``True`` while its mechanism is modelled.

Kinds: ``INT`` (int64), ``FLOAT`` (float64), ``FLAG`` (boolean) and ``GEOMETRY``, a cache's
``(sets, ways, line bytes, sector bytes)`` as :func:`teg.memory.cache.cache_geometry` gives it
(0 sets: no such cache).
"""

from __future__ import annotations

from collections import namedtuple

from teg.engine.options import MECHANISMS

INT, FLOAT, FLAG, GEOMETRY = "int", "float", "flag", "geometry"
REQUIRED = None             # a default that says: every encoding must give this one
NO_CACHE = (0, 0, 0, 0)

SCALARS: tuple[tuple[str, str, object, str], ...] = (
    # the simulated SMs and their schedulers
    ("sms", INT, REQUIRED, "SMs simulated"),
    ("schedulers", INT, REQUIRED, "warp schedulers (sub-partitions) per SM"),
    ("slots", INT, REQUIRED, "warp slots per SM"),
    ("resident", INT, REQUIRED, "blocks resident at once per SM (occupancy)"),
    ("warp_size", INT, REQUIRED, "threads per warp"),
    ("policy", INT, REQUIRED, "warp scheduling policy, a POLICY_* code"),
    ("depmodel", INT, REQUIRED, "dependency model, a DEPMODEL_* code"),
    ("deal", FLAG, False, "blocks dealt dynamically from one grid-wide queue (every SM filled up to its "
                          "occupancy breadth-first, then each next block to the SM whose slot frees "
                          "first); else each SM runs its own list"),
    ("issue_interval", FLOAT, REQUIRED, "cycles between two issues of one scheduler"),
    ("rbar_latency", FLOAT, REQUIRED, "cycles until a memory instruction (or one of an SM-shared unit) has read "
                                 "its source registers (read-barrier release)"),
    ("block_launch_latency", FLOAT, 0.0, "cycles from a block's retirement until the next block on its SM "
                                         "issues (with block_launch; else 1)"),
    ("kernel_launch_cycles", FLOAT, 0.0, "cycles the kernel takes beyond its SMs' work, launch and drain (with "
                                         "kernel_launch; teg.engine.run adds them, the loop never reads them)"),
    # the mechanism switches (teg.engine.options.MECHANISMS)
    *((name, FLAG, True, f"switch: {name} modelled (off: {removed})") for name, removed in MECHANISMS.items()),
    # shared memory
    ("wavefront_cycles", FLOAT, 0.0, "cycles each further shared (or L1 data-stage) wavefront adds"),
    # the memory system (docs/model.md §3)
    ("l1", GEOMETRY, NO_CACHE, "L1 data cache geometry per SM"),
    ("l1_hashed", FLAG, False, "L1 set index XOR-hashed (else line mod sets)"),
    ("l1_latency", FLOAT, 0.0, "load-to-use cycles of an L1 hit"),
    ("store_cycles_per_sector", FLOAT, 0.0, "cycles a global store holds its SM's store path per 32 B sector it "
                                            "sends to L2 (0: not modelled)"),
    ("l2_request_cycles", FLOAT, 0.0, "cycles the L1 pipeline spends on each request it sends to L2 (one per "
                                      "cache line; with l2_requests)"),
    ("l2", GEOMETRY, NO_CACHE, "L2 geometry of one partition"),
    ("l2_hashed", FLAG, False, "L2 set index XOR-hashed"),
    ("l2_latency", FLOAT, 0.0, "load-to-use cycles of an L2 hit (near partition)"),
    ("l2_far_latency", FLOAT, 0.0, "load-to-use cycles of an L2 hit in the far partition"),
    ("l2_partitions", INT, 0, "L2 partitions (each SM has a near one, each address a home one; 0 or 1: one L2)"),
    ("l2_partition_bytes", INT, 0, "home-partition interleave in bytes"),
    ("l2_slices", INT, 0, "L2 slices in all (0: no slice bandwidth)"),
    ("l2_slice_cycles_per_byte", FLOAT, 0.0, "cycles one L2 slice needs per byte it serves"),
    ("channels", INT, REQUIRED, "DRAM channels"),
    ("dram_latency", FLOAT, REQUIRED, "load-to-use cycles of a DRAM access"),
    ("dram_cycles_per_byte", FLOAT, REQUIRED, "cycles one DRAM channel needs per byte it serves"),
    ("sms_per_pipeline", INT, REQUIRED, "SMs sharing one memory pipeline"),
    ("pipe_slots", INT, 0, "memory-pipeline slots (C_mem: instructions past L1 in flight; 0: unlimited)"),
    ("mshr_lines", INT, 0, "outstanding L1 misses per SM counted per cache line (0: pipe_slots instead)"),
    ("tlb1", GEOMETRY, NO_CACHE, "L1 TLB geometry per SM (a line: the page one entry translates)"),
    ("tlb2", GEOMETRY, NO_CACHE, "L2 TLB geometry"),
    ("tlb2_latency", FLOAT, 0.0, "cycles an L1 TLB miss that hits the L2 TLB adds"),
    ("walk_latency", FLOAT, 0.0, "cycles a page walk adds"),
    ("dram_write_batch", FLOAT, 0.0, "bytes of writes a DRAM channel buffers before it drains them in one batch "
                                     "(0: read/write turnaround not modelled)"),
    ("dram_rtw_cycles", FLOAT, 0.0, "cycles a channel's data bus idles turning from reads to writes"),
    ("dram_wtr_cycles", FLOAT, 0.0, "cycles a channel's data bus idles turning from writes to reads"),
    ("dram_banks", INT, 0, "banks per DRAM channel, each with one open row (0: row buffers not modelled)"),
    ("dram_row_bytes", INT, 0, "bytes of one DRAM bank's row (channel-local addresses)"),
    ("dram_row_miss_cycles", FLOAT, 0.0, "cycles a DRAM row miss adds to a row hit (tRP + tRCD); "
                                         "dram_latency is the row-miss latency"),
    ("dram_interleave", INT, 0, "DRAM channel interleave in bytes (the channel-local address's granule)"),
    # instruction fetch (docs/model.md §2)
    ("fetch_prefetch", INT, 0, "instruction-cache lines fetched beyond a missing one"),
    # what the run records (teg.engine.records)
    ("records", INT, 0, "record bits: REC_ROWS, REC_PCS"),
    ("record_order", FLAG, False, "record the global issue order (Result.order)"),
)

Scalars = namedtuple("Scalars", [name for name, _, _, _ in SCALARS])
Scalars.__doc__ = "The scalars of one engine run, in the order and with the meaning :data:`SCALARS` declares."

_KIND = {name: kind for name, kind, _, _ in SCALARS}
_DEFAULTS = {name: default for name, _, default, _ in SCALARS}


class ScalarError(ValueError):
    """A scalar that is not declared, or a value that does not fit its kind."""


def _coerce(name: str, value):
    kind = _KIND[name]
    if kind == GEOMETRY:
        g = tuple(int(v) for v in value)
        if len(g) != 4:
            raise ScalarError(f"scalar {name}: a geometry is (sets, ways, line bytes, sector bytes), got {value!r}")
        return g
    return {INT: int, FLOAT: float, FLAG: bool}[kind](value)


def scalars(base: Scalars | None = None, **values) -> Scalars:
    """The :class:`Scalars` with ``values`` (by name), every other one from ``base`` (default: the
    declared defaults), each coerced to its declared kind."""
    bad = sorted(set(values) - set(_KIND))
    if bad:
        raise ScalarError(f"unknown engine scalar {bad[0]!r}")
    out = dict(base._asdict()) if base is not None else dict(_DEFAULTS)
    out.update(values)
    missing = [name for name, v in out.items() if v is REQUIRED]
    if missing:
        raise ScalarError(f"engine scalar {missing[0]!r} has no default: give its value")
    return Scalars(**{name: _coerce(name, v) for name, v in out.items()})


def tlb_scalars(page_bytes: int, l1_entries: int, l2_page_bytes: int, l2_entries: int, l2_latency: float,
                walk_latency: float) -> dict:
    """Address translation's scalars: each TLB level a fully associative cache (one set of
    ``entries`` ways) whose "line" is the page one entry translates."""
    from teg.memory.cache import cache_geometry

    return {"tlb1": cache_geometry(l1_entries * page_bytes, page_bytes, page_bytes, l1_entries),
            "tlb2": cache_geometry(l2_entries * l2_page_bytes, l2_page_bytes, l2_page_bytes, l2_entries),
            "tlb2_latency": l2_latency, "walk_latency": walk_latency}
