"""The machine-table schema: which keys each YAML section holds, their types and allowed values,
and the structural checks the loader applies (unknown key, missing key, wrong type, bad value).

Every numeric field accepts either a bare number (sourced by an enclosing ``source:``) or a
*value leaf* ``{value: X, source: "..."}``. The *source rule* itself is checked separately
(:func:`teg.machine.loader.check_sources`) because it applies to each file on its own.

The checker works in two modes: ``partial=True`` for one file of an ``extends:`` chain (every key
optional, since the base table supplies the rest) and ``partial=False`` for the merged result.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

from teg.machine.model import KINDS, SPACES

# Reporting classes of OpInfo.unit_class (teg.machine.model.OpInfo).
UNIT_CLASSES = ("int", "fp32", "fp16", "fp64", "sfu", "tensor", "conversion", "move", "predicate",
                "uniform", "memory", "control", "sync", "other")
OPCODE_KEY = re.compile(r"^[A-Z][A-Z0-9_]*(\.[A-Za-z0-9_]+)*$")
OPINFO_FIELDS = ("unit", "latency", "kind", "space", "variable", "unit_class")


# Upper bound of every number unless a field names its own: latencies, occupancies, rates and
# counts of real GPUs are far below it (a table beyond it would only make the engine's arrays and
# loops enormous)
PLAUSIBLE_MAX = 1e6
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
MAX_OUTSTANDING = 16 * KIB      # memory transaction slots per pipeline (given, or computed as C_mem)


class SchemaViolation(Exception):
    """A structural problem at a key path (the loader adds the file and line)."""

    def __init__(self, path: tuple[str, ...], problem: str):
        super().__init__(problem)
        self.path = path
        self.problem = problem


def unwrap_leaf(node: Any, path: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
    """A value leaf ``{value: X, source: "..."}`` gives ``(X, path + ("value",))`` after checking its
    keys; a bare value is returned as it is."""
    if not isinstance(node, dict):
        return node, path
    unknown = set(node) - {"value", "source"}
    if unknown:
        raise SchemaViolation(path + (sorted(map(str, unknown))[0],), "unknown key in value leaf "
                              "(allowed: value, source)")
    if "value" not in node:
        raise SchemaViolation(path + ("value",), "missing key")
    if "source" in node and not isinstance(node["source"], str):
        raise SchemaViolation(path + ("source",), "wrong type: expected a string")
    return node["value"], path + ("value",)


def is_number(x: Any) -> bool:
    """True for int/float YAML scalars (booleans are not numbers)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def is_value_leaf(x: Any) -> bool:
    """True for a ``{value: X, source: S}`` mapping."""
    return isinstance(x, dict) and "value" in x


@dataclass(frozen=True)
class Num:
    """A finite number, optionally integral, bounded below and above (by default by
    :data:`PLAUSIBLE_MAX`: no count, latency or rate of a real GPU comes near it); bare or as a
    value leaf."""

    integer: bool = False
    minimum: float | None = 0
    required: bool = True
    positive: bool = False
    power_of_two: bool = False
    maximum: float | None = None    # None: PLAUSIBLE_MAX

    def check(self, node: Any, path: tuple[str, ...], partial: bool) -> None:
        node, path = unwrap_leaf(node, path)
        if not is_number(node):
            raise SchemaViolation(path, f"wrong type: expected a number, got {_tname(node)}")
        if not math.isfinite(node):
            raise SchemaViolation(path, f"bad value {node!r}: must be a finite number")
        limit = PLAUSIBLE_MAX if self.maximum is None else self.maximum
        if node > limit:
            raise SchemaViolation(path, f"bad value {node!r}: must be <= {limit:,g}")
        if self.integer and not (isinstance(node, int) or float(node).is_integer()):
            raise SchemaViolation(path, f"wrong type: expected an integer, got {node!r}")
        if self.minimum is not None and node < self.minimum:
            raise SchemaViolation(path, f"bad value {node!r}: must be >= {self.minimum}")
        if self.positive and node <= 0:
            raise SchemaViolation(path, f"bad value {node!r}: must be > 0")
        if self.power_of_two and (node <= 0 or int(node) != node or int(node) & (int(node) - 1)):
            raise SchemaViolation(path, f"bad value {node!r}: must be a power of two")


@dataclass(frozen=True)
class Str:
    """A string, optionally restricted to ``choices``."""

    choices: tuple[str, ...] | None = None
    required: bool = True

    def check(self, node: Any, path: tuple[str, ...], partial: bool) -> None:
        if not isinstance(node, str):
            raise SchemaViolation(path, f"wrong type: expected a string, got {_tname(node)}")
        if self.choices is not None and node not in self.choices:
            raise SchemaViolation(path, f"bad value {node!r}: expected one of {', '.join(self.choices)}")


@dataclass(frozen=True)
class Bool:
    required: bool = True

    def check(self, node: Any, path: tuple[str, ...], partial: bool) -> None:
        if not isinstance(node, bool):
            raise SchemaViolation(path, f"wrong type: expected true/false, got {_tname(node)}")


@dataclass(frozen=True)
class Flag:
    """A sourced true/false fact about the hardware, bare (sourced by an enclosing ``source:``) or
    as a value leaf ``{value: true|false, source: "..."}``. Unlike the structural booleans of the
    opcode classes, a flag's key path is listed in :data:`SOURCED_FLAGS`, so the source rule
    applies to it as to a number."""

    required: bool = True

    def check(self, node: Any, path: tuple[str, ...], partial: bool) -> None:
        node, path = unwrap_leaf(node, path)
        Bool().check(node, path, partial)


@dataclass(frozen=True)
class SourcedChoice:
    """A sourced fact that is one of ``choices`` (a behaviour, not a number), always as a value
    leaf ``{value: choice, source: "..."}`` with its source beside it."""

    choices: tuple[str, ...]
    required: bool = True

    def check(self, node: Any, path: tuple[str, ...], partial: bool) -> None:
        if not isinstance(node, dict):
            raise SchemaViolation(path, "wrong type: expected {value: ..., source: \"...\"}")
        value, vpath = unwrap_leaf(node, path)
        if "source" not in node:
            raise SchemaViolation(path + ("source",), "missing key")
        Str(self.choices).check(value, vpath, partial)


@dataclass(frozen=True)
class NumList:
    """A non-empty list of numbers (e.g. coalescing segment sizes; ``positive=False`` admits 0)."""

    integer: bool = True
    required: bool = True
    positive: bool = True
    maximum: float = 64 * KIB

    def check(self, node: Any, path: tuple[str, ...], partial: bool) -> None:
        if isinstance(node, dict) and "value" in node:
            self.check(node["value"], path + ("value",), partial)
            return
        if not isinstance(node, list) or not node:
            raise SchemaViolation(path, f"wrong type: expected a non-empty list of numbers, got {_tname(node)}")
        for i, x in enumerate(node):
            Num(integer=self.integer, positive=self.positive, maximum=self.maximum).check(x, path + (str(i),), partial)


@dataclass(frozen=True)
class Section:
    """A mapping with fixed keys. ``source`` (a string) is allowed in every section."""

    fields: dict[str, Any]
    required: bool = True
    nullable: bool = False

    def check(self, node: Any, path: tuple[str, ...], partial: bool) -> None:
        if node is None and self.nullable:
            return
        if not isinstance(node, dict):
            raise SchemaViolation(path, f"wrong type: expected a mapping, got {_tname(node)}")
        for key, val in node.items():
            key = str(key)
            if key == "source":
                if not isinstance(val, str):
                    raise SchemaViolation(path + (key,), f"wrong type: expected a string, got {_tname(val)}")
                continue
            spec = self.fields.get(key)
            if spec is None:
                allowed = ", ".join(sorted(self.fields) + ["source"])
                raise SchemaViolation(path + (key,), f"unknown key (allowed here: {allowed})")
            spec.check(val, path + (key,), partial)
        if not partial:
            for key, spec in self.fields.items():
                if spec.required and key not in node:
                    raise SchemaViolation(path + (key,), "missing key")


@dataclass(frozen=True)
class MapOf:
    """A mapping from free names to items of one spec; ``key_pattern`` constrains the names."""

    item: Any
    key_pattern: re.Pattern | None = None
    required: bool = True
    min_items: int = 0

    def check(self, node: Any, path: tuple[str, ...], partial: bool) -> None:
        if not isinstance(node, dict):
            raise SchemaViolation(path, f"wrong type: expected a mapping, got {_tname(node)}")
        for key, val in node.items():
            key_s = str(key)
            if self.key_pattern is not None and not self.key_pattern.match(key_s):
                raise SchemaViolation(path + (key_s,), f"bad key {key_s!r}: expected {self.key_pattern.pattern}")
            self.item.check(val, path + (key_s,), partial)
        if not partial and len(node) < self.min_items:
            raise SchemaViolation(path, f"needs at least {self.min_items} entr{'y' if self.min_items == 1 else 'ies'}")


@dataclass(frozen=True)
class OneOf:
    """The first alternative whose type matches (a string or a mapping)."""

    alternatives: tuple[Any, ...]
    required: bool = True

    def check(self, node: Any, path: tuple[str, ...], partial: bool) -> None:
        for alt in self.alternatives:
            if isinstance(alt, Str) and isinstance(node, str):
                return alt.check(node, path, partial)
            if isinstance(alt, Section) and isinstance(node, dict):
                return alt.check(node, path, partial)
        raise SchemaViolation(path, f"wrong type: expected a class name or a mapping, got {_tname(node)}")


@dataclass(frozen=True)
class ValueLeaf:
    """Exactly ``{value: number, source: string}`` (the ``analytical:`` entries)."""

    required: bool = True

    def check(self, node: Any, path: tuple[str, ...], partial: bool) -> None:
        if not isinstance(node, dict):
            raise SchemaViolation(path, f"wrong type: expected {{value: number, source: string}}, got {_tname(node)}")
        for key in node:
            if key not in ("value", "source"):
                raise SchemaViolation(path + (str(key),), "unknown key (allowed here: source, value)")
        for key in ("value", "source"):
            if key not in node:
                raise SchemaViolation(path + (key,), "missing key")
        Num(minimum=None).check(node["value"], path + ("value",), partial)
        Str().check(node["source"], path + ("source",), partial)


def _tname(x: Any) -> str:
    if x is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list",
            dict: "mapping"}.get(type(x), type(x).__name__)


@dataclass(frozen=True)
class MaxOutstanding:
    """``max_outstanding`` is a number or ``{c_mem_ele_size: bytes, source: ...}`` (then computed
    by :func:`teg.machine.formulas.c_mem`, TEG §3.2.4)."""

    required: bool = True

    def check(self, node: Any, path: tuple[str, ...], partial: bool) -> None:
        if isinstance(node, dict) and "c_mem_ele_size" in node:
            unknown = set(node) - {"c_mem_ele_size", "source"}
            if unknown:
                raise SchemaViolation(path + (sorted(map(str, unknown))[0],),
                                      "unknown key (allowed here: c_mem_ele_size, source)")
            Num(integer=True, positive=True, maximum=KIB).check(node["c_mem_ele_size"], path + ("c_mem_ele_size",),
                                                                partial)
            return
        Num(integer=True, positive=True, maximum=MAX_OUTSTANDING).check(node, path, partial)


CACHE = Section({
    "size_bytes": Num(integer=True, positive=True, maximum=GIB),
    "line_bytes": Num(integer=True, positive=True, power_of_two=True, maximum=4 * KIB),
    "sector_bytes": Num(integer=True, positive=True, power_of_two=True, maximum=4 * KIB),
    "assoc": Num(integer=True, positive=True, maximum=1024),
    "latency": Num(positive=True),
    "index": Str(("linear", "xor"), required=False),
}, required=False, nullable=True)
# an L1 is per SM: its state is held once per simulated SM (the largest real one is 256 kB)
# and a unified L1/shared array names the shared capacities (KB) the driver may carve out of it
L1_CACHE = replace(CACHE, fields={**CACHE.fields, "size_bytes": Num(integer=True, positive=True, maximum=MIB),
                                  "shared_carveouts_kb": NumList(required=False, positive=False, maximum=KIB),
                                  "tags_per_cycle": Num(integer=True, positive=True, maximum=32, required=False),
                                  "store_cycles_per_sector": Num(positive=True, maximum=64, required=False),
                                  "l2_request_cycles": Num(positive=True, maximum=64, required=False)})

# address translation (docs/model.md §3): L1 TLB per SM, one L2 TLB, cold at kernel start
TLB = Section({
    "page_bytes": Num(integer=True, positive=True, power_of_two=True, maximum=GIB),
    "l1_entries": Num(integer=True, positive=True, maximum=1024),
    "l2_page_bytes": Num(integer=True, positive=True, power_of_two=True, maximum=GIB),
    "l2_entries": Num(integer=True, positive=True, maximum=64 * KIB),
    "l2_latency": Num(),
    "walk_latency": Num(),
}, required=False, nullable=True)

# DRAM read/write turnaround (docs/model.md §3): write batches and the data-bus bubbles of a switch
DRAM_TURNAROUND = Section({
    "read_to_write_ns": Num(),
    "write_to_read_ns": Num(),
    "write_batch_bytes": Num(integer=True, positive=True, maximum=GIB),
}, required=False, nullable=True)

# DRAM row buffers (docs/model.md §3): each channel's banks keep their last row open; a row miss
# costs the precharge and activation a row hit skips
DRAM_ROWS = Section({
    "banks": Num(integer=True, positive=True, maximum=1024),
    "row_bytes": Num(integer=True, positive=True, maximum=GIB),
    "row_miss_ns": Num(positive=True),
}, required=False, nullable=True)

OPCLASS_FIELDS = {
    "unit": Str(),
    "latency": Str(),
    "kind": Str(KINDS),
    "space": Str(SPACES),
    "variable": Bool(),
    "unit_class": Str(UNIT_CLASSES),
    "width": Num(integer=True, required=False, maximum=1024),
    "occupancy": Num(positive=True, required=False),
}

OPCODE_ENTRY = OneOf((
    Str(),
    Section({"class": Str(required=False),
             **{k: replace(v, required=False) for k, v in OPCLASS_FIELDS.items()}}),
))

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: key paths of :class:`Flag` values: the source rule checks them like numbers
SOURCED_FLAGS: frozenset[tuple[str, ...]] = frozenset({
    ("memory", "l1_caches_global_loads"),
    ("shared", "paired_loads"),
})

TABLE = Section({
    "name": Str(required=False),
    "description": Str(),
    "extends": Str(required=False),
    "sources": MapOf(Str(), required=False),
    "sm": Num(integer=True, positive=True, maximum=1000),
    "clock_mhz": Num(positive=True, maximum=10_000),
    "num_sms": Num(integer=True, positive=True, maximum=1024),
    "warp_size": Num(integer=True, positive=True, power_of_two=True, maximum=32),   # lane masks are 32 bits
    "schedulers": Num(integer=True, positive=True, maximum=16),
    "issue_interval": Num(positive=True),
    "block_launch_cycles": Num(required=False),
    "kernel_launch_cycles": Num(required=False),
    "dependency_model": Str(("scoreboard", "controlcodes")),
    # the warp scheduler's issue order (teg.engine.Options.policy); absent: greedy-then-oldest
    "scheduler_policy": SourcedChoice(("gto", "gty", "lrr"), required=False),
    "limits": Section({
        "max_warps": Num(integer=True, positive=True, maximum=128),
        "max_blocks": Num(integer=True, positive=True, maximum=128),
        "max_threads": Num(integer=True, positive=True, maximum=4096),
        "max_threads_per_block": Num(integer=True, positive=True, maximum=4096),
        "registers": Num(integer=True, positive=True, maximum=MIB),
        "max_regs_per_thread": Num(integer=True, positive=True, maximum=256),
        "reg_alloc_unit": Num(integer=True, positive=True, maximum=64 * KIB),
        "reg_alloc_per": Str(("warp", "block"), required=False),
    }),
    "units": MapOf(Section({
        "occupancy": Num(positive=True),
        "count": Num(integer=True, positive=True, required=False, maximum=64),
        "per": Str(("scheduler", "sm"), required=False),
    }), key_pattern=NAME, min_items=1),
    "latencies": MapOf(Section({
        "execution": Num(),
        "issue_multi": Num(),
        "issue_same": Num(),
    }), key_pattern=NAME, min_items=1),
    "shared": Section({
        "banks": Num(integer=True, positive=True, maximum=64),
        "bank_bytes": Num(integer=True, positive=True, maximum=64),
        "phase_lanes": Num(integer=True, positive=True, maximum=32),
        "latency": Num(positive=True),
        "wavefront_cycles": Num(),
        "size_per_sm": Num(integer=True, positive=True, maximum=16 * MIB),
        "max_per_block": Num(integer=True, positive=True, maximum=16 * MIB),
        "alloc_unit": Num(integer=True, positive=True, maximum=MIB),
        "reserved_per_block": Num(integer=True, required=False, maximum=64 * KIB),
        "paired_loads": Flag(required=False),
    }),
    "memory": Section({
        "coalescing": Str(("cc13", "sector")),
        "segment_bytes": NumList(),
        "dram_latency": Num(positive=True),
        "channels": Num(integer=True, positive=True, maximum=1024),
        "interleave_bytes": Num(integer=True, positive=True, maximum=MIB),
        "channel_hash": Str(("linear", "xor", "ipoly")),
        "bandwidth_gbs": Num(positive=True),
        "max_outstanding": MaxOutstanding(),
        "sms_per_pipeline": Num(integer=True, positive=True, maximum=1024),
        "l1": L1_CACHE,
        "l2": CACHE,
        "l2_bandwidth_bytes_per_clk": Num(positive=True, required=False),
        "l2_partitions": Num(integer=True, positive=True, required=False, maximum=64),
        "l2_partition_bytes": Num(integer=True, positive=True, required=False, maximum=GIB),
        "l2_partition_sms": NumList(required=False, maximum=1024),
        "l2_far_latency": Num(positive=True, required=False),
        "l2_slices": Num(integer=True, positive=True, required=False, maximum=1024),
        "l1_mshr_lines": Num(integer=True, positive=True, required=False, maximum=64 * KIB),
        "local_latency": Num(positive=True, required=False),
        "const_latency": Num(positive=True, required=False),
        "l1_caches_global_loads": Flag(required=False),
        "icache_line_bytes": Num(integer=True, positive=True, required=False, power_of_two=True, maximum=64 * KIB),
        "icache_prefetch_lines": Num(integer=True, required=False, maximum=1024),
        "tlb": TLB,
        "dram_turnaround": DRAM_TURNAROUND,
        "dram_rows": DRAM_ROWS,
    }),
    "opcodes": Section({
        "classes": MapOf(Section(dict(OPCLASS_FIELDS)), key_pattern=NAME, min_items=1),
        "map": MapOf(OPCODE_ENTRY, key_pattern=OPCODE_KEY, min_items=1),
    }),
    "analytical": MapOf(ValueLeaf(), key_pattern=NAME, required=False),
})
