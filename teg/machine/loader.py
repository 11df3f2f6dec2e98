"""Load, validate and resolve machine tables (``isa_tables/*.yaml``) into :class:`Machine`.

Resolution of one table:

1. read the YAML (keeping the line of every key for error messages);
2. check the file on its own: structure (unknown key, wrong type, bad value; keys optional) and the
   *source rule* — every number written in a file must have a source in scope *in that file*:
   either it is a value leaf ``{value: X, source: "..."}`` or some enclosing mapping below the top
   level has a ``source:`` string (the top-level ``sources:`` mapping is a bibliography, not a scope);
3. follow ``extends:`` (a shipped table name, or a path relative to the extending file) and
   deep-merge the file over its base (value leaves and lists are replaced whole, ``null`` replaces);
4. check the merged document completely (missing keys, cross references such as an opcode class
   naming a unit the table does not define) and build the frozen dataclasses.

Errors are :class:`MachineTableError` with ``file[:line]: key.path: problem`` on one line.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import yaml

from teg import TegError
from teg.machine import generated, schema
from teg.machine.formulas import c_mem_from, c_mem_slots
from teg.machine.model import (MAX_SECTORS_PER_LINE, Cache, DramRows, DramTurnaround, GlobalMemory, Latency, Limits, Machine,
                               OpInfo, SharedMemory, Tlb, Unit)
from teg.resources import isa_tables_dir
from teg.textfile import TextFileError, read_text
from teg.yamlfile import YamlError, load_yaml


class MachineTableError(TegError):
    """A machine table that cannot be read, resolved or validated."""


_CACHE: dict[str, tuple[tuple[tuple[str, str], ...], Machine]] = {}


# --------------------------------------------------------------------------------------------
# Public API


def available() -> list[str]:
    """Names of the shipped machine tables (file stems of ``isa_tables/*.yaml``), sorted."""
    return sorted(p.stem for p in isa_tables_dir().glob("*.yaml"))


# SM version → shipped table. Versions without their own table use the nearest relative; the
# table's description says whose numbers it carries.
_ARCH_TABLES = {
    10: "gt200", 11: "gt200", 12: "gt200", 13: "gt200",
    60: "sm_61", 61: "sm_61", 62: "sm_61",
    70: "sm_70", 72: "sm_70", 75: "sm_75",
    80: "sm_80",
    86: "sm_86", 87: "sm_86", 89: "sm_89",
    90: "sm_90",
    100: "sm_100", 101: "sm_100", 103: "sm_100", 110: "sm_100", 120: "sm_120", 121: "sm_120",
}


def for_arch(sm: int) -> str:
    """Name of the shipped table suggested for compute capability ``sm`` (e.g. 86 → ``"sm_86"``).

    Pascal (sm_60, sm_62) uses ``sm_61`` (GP102; the Pascal opcode classification carries over,
    GP100's FP64-heavy SM does not); Jetson Xavier (sm_72) uses ``sm_70``; Jetson Orin (sm_87)
    uses ``sm_86``; Blackwell data-centre parts (sm_100 … sm_110) use ``sm_100`` and consumer
    parts (sm_120, sm_121) ``sm_120``; both carry Hopper timing numbers until measured. Raises
    :class:`MachineTableError` for versions with no related table (e.g. Kepler, Maxwell)."""
    try:
        sm = int(sm)
    except (TypeError, ValueError):
        raise MachineTableError(f"for_arch: expected an SM version such as 90, got {sm!r}") from None
    name = _ARCH_TABLES.get(sm)
    if name is None:
        known = ", ".join(str(k) for k in sorted(_ARCH_TABLES))
        raise MachineTableError(f"no machine table for sm_{sm} (tables exist for sm {known})")
    return name


def load(name_or_path: str | os.PathLike) -> Machine:
    """Load a machine table by shipped name (``"sm_90"``) or by path to a YAML file (which may
    ``extends:`` a shipped table or another file). Results are cached per file and reloaded when a
    file of the ``extends:`` chain changes; treat the returned :class:`Machine` as read-only."""
    path = _locate(name_or_path)
    key = str(path)
    hit = _CACHE.get(key)
    if hit is not None and all(_mtime(p) == m for p, m in hit[0]):
        return hit[1]
    doc, chain = resolve(path)
    machine = build(doc, path)
    _CACHE[key] = (tuple((str(p), _mtime(p)) for p in chain), machine)
    return machine


def resolve(path: str | os.PathLike) -> tuple[dict[str, Any], list[Path]]:
    """Read ``path`` and its ``extends:`` chain, check each file on its own, and return the
    merged document plus the chain of files (the table itself first)."""
    chain: list[Path] = []
    docs: list[dict[str, Any]] = []
    current: Path | None = Path(path).resolve()
    while current is not None:
        if current in chain:
            cycle = " -> ".join(p.name for p in chain + [current])
            raise MachineTableError(f"{chain[-1]}: extends: cycle {cycle}")
        doc, lines = _read(current)
        _check_file(doc, lines, current)
        chain.append(current)
        docs.append(doc)
        ext = doc.get("extends")
        current = _extends_path(ext, current, lines) if ext is not None else None
    merged: dict[str, Any] = {}
    for doc in reversed(docs):
        merged = merge(merged, doc)
    merged.pop("extends", None)
    # a derived table is named after itself (its own name: or file stem), never after its base
    merged["name"] = docs[0].get("name", Path(path).stem)
    order = list(schema.TABLE.fields)   # present the sections in schema order
    return {k: merged[k] for k in sorted(merged, key=lambda k: order.index(k) if k in order else len(order))}, chain


def merge(base: Any, over: Any) -> Any:
    """Deep-merge ``over`` onto ``base``: mappings merge key by key; value leaves
    (``{value: …}``), lists, scalars and ``null`` replace. When both mappings carry a ``source``
    and ``over`` keeps some of ``base``'s keys, the sources are joined so neither is lost."""
    if not (isinstance(base, dict) and isinstance(over, dict)) or schema.is_value_leaf(over) \
            or schema.is_value_leaf(base):
        return copy.deepcopy(over)
    out = copy.deepcopy(base)
    for key, val in over.items():
        out[key] = merge(base[key], val) if key in base else copy.deepcopy(val)
    b_src, o_src = base.get("source"), over.get("source")
    kept = [k for k in base if k != "source" and k not in over]
    if isinstance(b_src, str) and isinstance(o_src, str) and b_src != o_src and kept:
        out["source"] = f"{o_src}; inherited: {b_src}"
    return out


def table_error(file: Path | str, path: tuple[str, ...], problem: str, lines: dict | None = None) -> MachineTableError:
    """A :class:`MachineTableError` naming ``file[:line]: key.path: problem``."""
    line = None
    if lines:
        for n in range(len(path), 0, -1):  # nearest key that exists in the file
            line = lines.get(path[:n])
            if line is not None:
                break
    where = f"{file}:{line}" if line is not None else f"{file}"
    key = ".".join(map(str, path)) if path else "<top>"
    return MachineTableError(f"{where}: {key}: {problem}")


# --------------------------------------------------------------------------------------------
# Reading and per-file checks


def _locate(name_or_path: str | os.PathLike) -> Path:
    text = os.fspath(name_or_path)
    p = Path(text)
    if p.suffix in (".yaml", ".yml") or os.sep in text or "/" in text:
        if p.exists() and not p.is_file():
            from teg.fileio import stream_kind

            raise MachineTableError(f"{p}: is a {stream_kind(p) or 'folder'}, not a machine table file (teg reads "
                                    "regular files only)")
        if not p.is_file():
            raise MachineTableError(f"{p}: machine table file not found")
        return p.resolve()
    shipped = isa_tables_dir() / f"{text}.yaml"
    if not shipped.is_file():
        raise MachineTableError(f"unknown machine {text!r}; available: {', '.join(available())} "
                                f"(or give a path to a .yaml table)")
    return shipped.resolve()


def _extends_path(ext: Any, current: Path, lines: dict) -> Path:
    if not isinstance(ext, str) or not ext:
        raise table_error(current, ("extends",), "wrong type: expected a table name or a path", lines)
    p = Path(ext)
    if p.suffix in (".yaml", ".yml") or "/" in ext or os.sep in ext:
        target = p if p.is_absolute() else current.parent / p
        if not target.is_file():
            raise table_error(current, ("extends",), f"bad extends: file {target} not found", lines)
        return target.resolve()
    shipped = isa_tables_dir() / f"{ext}.yaml"
    if not shipped.is_file():
        raise table_error(current, ("extends",),
                          f"bad extends: no shipped table {ext!r} (available: {', '.join(available())})", lines)
    return shipped.resolve()


def _mtime(p: Path | str) -> str:
    """The file's fingerprint (:func:`teg.trace.digest.fingerprint`: it changes on every edit, also
    one that keeps the size and puts the modification time back), "" when it cannot be read."""
    from teg.trace.digest import fingerprint

    try:
        return fingerprint(os.stat(p))
    except OSError:
        return ""


MAX_TABLE_BYTES = 1 << 20      # the shipped tables are 10-30 kB
_FILES: dict[str, tuple[str, dict[str, Any], dict[tuple[str, ...], int]]] = {}


def _read(path: Path) -> tuple[dict[str, Any], dict[tuple[str, ...], int]]:
    """Parse YAML (cached per file and modification time); return a fresh copy of the document
    and the 1-based line of every key path."""
    mtime = _mtime(path)
    hit = _FILES.get(str(path))
    if hit is not None and hit[0] == mtime:
        return copy.deepcopy(hit[1]), hit[2]
    doc, lines = _parse(path)
    _FILES[str(path)] = (mtime, copy.deepcopy(doc), lines)
    return doc, lines


def _parse(path: Path) -> tuple[dict[str, Any], dict[tuple[str, ...], int]]:
    try:
        text = read_text(path, MAX_TABLE_BYTES, "machine table")
    except TextFileError as exc:
        raise MachineTableError(str(exc)) from None
    except OSError as exc:
        raise MachineTableError(f"{path}: cannot read machine table: {exc.strerror or exc}") from None
    cut = generated.truncation(text)
    if cut:
        raise MachineTableError(f"{path}: {cut}")
    try:
        doc, node = load_yaml(text)
    except YamlError as exc:
        where = f"{path}:{exc.line}" if exc.line is not None else str(path)
        raise MachineTableError(f"{where}: {exc.problem}") from None
    if not isinstance(doc, dict):
        raise MachineTableError(f"{path}: a machine table must be a YAML mapping at the top level")
    lines: dict[tuple[str, ...], int] = {}
    _record_lines(node, (), lines)
    return doc, lines


def _record_lines(node: Any, path: tuple[str, ...], lines: dict) -> None:
    if isinstance(node, yaml.MappingNode):
        for knode, vnode in node.value:
            kp = path + (str(knode.value),)
            lines[kp] = knode.start_mark.line + 1
            _record_lines(vnode, kp, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, vnode in enumerate(node.value):
            kp = path + (str(i),)
            lines[kp] = vnode.start_mark.line + 1
            _record_lines(vnode, kp, lines)


def _check_file(doc: dict[str, Any], lines: dict, path: Path) -> None:
    try:
        schema.TABLE.check(doc, (), partial=True)
    except schema.SchemaViolation as v:
        raise table_error(path, v.path, v.problem, lines) from None
    unsourced = check_sources(doc)
    if unsourced is not None:
        what = "flag" if _is_flag(unsourced) else "number"
        raise table_error(path, unsourced, f"{what} without a source: write {{value: X, source: \"...\"}} "
                          "or add a source: string to an enclosing section", lines)


def _is_flag(path: tuple[str, ...]) -> bool:
    """True for the key path of a sourced flag, bare or inside its value leaf."""
    return path in schema.SOURCED_FLAGS or (path[-1:] == ("value",) and path[:-1] in schema.SOURCED_FLAGS)


def check_sources(doc: dict[str, Any]) -> tuple[str, ...] | None:
    """The source rule: return the key path of the first number (or sourced flag,
    :data:`teg.machine.schema.SOURCED_FLAGS`) with no source in scope, or None.

    A number is sourced when its own mapping or any enclosing mapping below the top level has a
    ``source`` string (a value leaf ``{value: X, source: S}`` is the one-number case). The
    top-level ``sources:`` bibliography does not source anything."""

    def walk(node: Any, path: tuple[str, ...], in_scope: bool) -> tuple[str, ...] | None:
        if isinstance(node, dict):
            scoped = in_scope or (bool(path) and isinstance(node.get("source"), str) and bool(node["source"].strip()))
            for key, val in node.items():
                if not path and key == "sources":
                    continue
                bad = walk(val, path + (str(key),), scoped)
                if bad is not None:
                    return bad
        elif isinstance(node, list):
            for i, val in enumerate(node):
                bad = walk(val, path + (str(i),), in_scope)
                if bad is not None:
                    return bad
        elif (schema.is_number(node) or (isinstance(node, bool) and _is_flag(path))) and not in_scope:
            return path
        return None

    return walk(doc, (), False)


# --------------------------------------------------------------------------------------------
# Building the Machine


def _v(x: Any) -> Any:
    """Unwrap a value leaf."""
    return x["value"] if schema.is_value_leaf(x) else x


def build(doc: dict[str, Any], path: Path) -> Machine:
    """Validate a merged document completely and build the :class:`Machine`."""
    try:
        schema.TABLE.check(doc, (), partial=False)
        return _build(doc, path)
    except schema.SchemaViolation as v:
        raise table_error(path, v.path, v.problem + " (in the table resolved through extends:)") from None


def _build(doc: dict[str, Any], path: Path) -> Machine:
    units = {name: Unit(name=name, occupancy=float(_v(u["occupancy"])), count=int(_v(u.get("count", 1))),
                        per=u.get("per", "scheduler"))
             for name, u in doc["units"].items()}
    latencies = {name: Latency(name=name, execution=float(_v(l["execution"])),
                               issue_multi=float(_v(l["issue_multi"])), issue_same=float(_v(l["issue_same"])))
                 for name, l in doc["latencies"].items()}
    opcodes = _build_opcodes(doc["opcodes"], units, latencies)
    lim = doc["limits"]
    limits = Limits(**{k: int(_v(lim[k])) for k in ("max_warps", "max_blocks", "max_threads",
                                                     "max_threads_per_block", "registers",
                                                     "max_regs_per_thread", "reg_alloc_unit")},
                    reg_alloc_per=lim.get("reg_alloc_per", "warp"))
    sh = doc["shared"]
    shared = SharedMemory(
        banks=int(_v(sh["banks"])), bank_bytes=int(_v(sh["bank_bytes"])), phase_lanes=int(_v(sh["phase_lanes"])),
        latency=float(_v(sh["latency"])), wavefront_cycles=float(_v(sh["wavefront_cycles"])),
        size_per_sm=int(_v(sh["size_per_sm"])), max_per_block=int(_v(sh["max_per_block"])),
        alloc_unit=int(_v(sh["alloc_unit"])), reserved_per_block=int(_v(sh.get("reserved_per_block", 0))),
        paired_loads=bool(_v(sh.get("paired_loads", False))))
    warp_size = int(_v(doc["warp_size"]))
    num_sms = int(_v(doc["num_sms"]))
    clock = float(_v(doc["clock_mhz"]))
    if shared.phase_lanes > warp_size or warp_size % shared.phase_lanes:
        raise schema.SchemaViolation(("shared", "phase_lanes"), f"bad value {shared.phase_lanes}: must divide warp_size {warp_size}")
    memory = _build_memory(doc["memory"], num_sms, warp_size, clock)
    if memory.l1 is not None and memory.l1.shared_carveouts and memory.l1.shared_carveouts[-1] != shared.size_per_sm:
        raise schema.SchemaViolation(("memory", "l1", "shared_carveouts_kb"),
                                     f"bad value: the largest carveout ({memory.l1.shared_carveouts[-1]} B) must be "
                                     f"shared.size_per_sm ({shared.size_per_sm} B)")
    return Machine(
        name=str(doc["name"]), description=doc["description"], sm=int(_v(doc["sm"])), clock_mhz=clock,
        num_sms=num_sms, warp_size=warp_size, schedulers=int(_v(doc["schedulers"])),
        issue_interval=float(_v(doc["issue_interval"])), dependency_model=doc["dependency_model"],
        limits=limits, units=units, latencies=latencies, shared=shared, memory=memory, opcodes=opcodes,
        extras={k: _v(v) for k, v in (doc.get("analytical") or {}).items()},
        source_path=str(path), raw=doc,
        block_launch_cycles=float(_v(doc["block_launch_cycles"])) if "block_launch_cycles" in doc else 0.0,
        kernel_launch_cycles=float(_v(doc["kernel_launch_cycles"])) if "kernel_launch_cycles" in doc else 0.0,
        scheduler_policy=str(_v(doc["scheduler_policy"])) if "scheduler_policy" in doc else "gto")


def _build_cache(c: dict | None, name: str) -> Cache | None:
    if c is None:
        return None
    if int(_v(c["sector_bytes"])) > int(_v(c["line_bytes"])):
        raise schema.SchemaViolation(("memory", name, "sector_bytes"), f"bad value {_v(c['sector_bytes'])}: "
                                     f"must be <= line_bytes {_v(c['line_bytes'])}")
    if int(_v(c["line_bytes"])) > MAX_SECTORS_PER_LINE * int(_v(c["sector_bytes"])):
        raise schema.SchemaViolation(("memory", name, "sector_bytes"), f"bad value {_v(c['sector_bytes'])}: "
                                     f"at most {MAX_SECTORS_PER_LINE} sectors per line of {_v(c['line_bytes'])} B")
    carve = tuple(sorted(int(kb) * 1024 for kb in _v(c.get("shared_carveouts_kb", []))))
    if carve and carve[-1] >= int(_v(c["size_bytes"])):
        raise schema.SchemaViolation(("memory", name, "shared_carveouts_kb"), f"bad value {carve[-1] // 1024} KB: "
                                     f"a carveout must leave some of the {_v(c['size_bytes'])} B to the L1")
    return Cache(size_bytes=int(_v(c["size_bytes"])), line_bytes=int(_v(c["line_bytes"])),
                 sector_bytes=int(_v(c["sector_bytes"])), assoc=int(_v(c["assoc"])),
                 latency=float(_v(c["latency"])), index=str(c.get("index", "linear")), shared_carveouts=carve,
                 tags_per_cycle=int(_v(c.get("tags_per_cycle", 0))),
                 store_cycles_per_sector=float(_v(c.get("store_cycles_per_sector", 0.0))),
                 l2_request_cycles=float(_v(c.get("l2_request_cycles", 0))))


def _build_tlb(t: dict) -> Tlb:
    """The ``memory.tlb`` section: an L2 TLB entry must translate at least one L1 TLB page."""
    page, l2_page = int(_v(t["page_bytes"])), int(_v(t["l2_page_bytes"]))
    if l2_page < page:
        raise schema.SchemaViolation(("memory", "tlb", "l2_page_bytes"), f"bad value {l2_page}: must be >= "
                                     f"page_bytes {page}")
    return Tlb(page_bytes=page, l1_entries=int(_v(t["l1_entries"])), l2_page_bytes=l2_page,
               l2_entries=int(_v(t["l2_entries"])), l2_latency=float(_v(t["l2_latency"])),
               walk_latency=float(_v(t["walk_latency"])))


def _partition_sms(node, partitions: int) -> tuple[int, ...]:
    """``memory.l2_partition_sms``: how many of the table's SMs each L2 partition is near, one
    count per partition (a table that extends it with another ``num_sms`` keeps the proportions:
    :func:`teg.engine.lowered.near_partitions`)."""
    counts = tuple(int(x) for x in _v(node))
    if len(counts) != partitions:
        raise schema.SchemaViolation(("memory", "l2_partition_sms"), f"bad value {list(counts)}: one count "
                                     f"per L2 partition (l2_partitions {partitions})")
    return counts


def _build_memory(m: dict, num_sms: int, warp_size: int, clock_mhz: float) -> GlobalMemory:
    sms_per_pipeline = int(_v(m["sms_per_pipeline"]))
    if num_sms % sms_per_pipeline:
        raise schema.SchemaViolation(("memory", "sms_per_pipeline"),
                                     f"bad value {sms_per_pipeline}: must divide num_sms {num_sms}")
    mo = m["max_outstanding"]
    if isinstance(mo, dict) and "c_mem_ele_size" in mo:
        max_out = c_mem_slots(c_mem_from(float(_v(m["bandwidth_gbs"])), float(_v(m["dram_latency"])),
                                         num_sms / sms_per_pipeline, warp_size,
                                         int(_v(mo["c_mem_ele_size"])), clock_mhz))
        if max_out > schema.MAX_OUTSTANDING:
            raise schema.SchemaViolation(("memory", "max_outstanding"), f"bad value: C_mem comes out at {max_out:,} "
                                         f"slots per pipeline, more than {schema.MAX_OUTSTANDING:,} (check "
                                         "bandwidth_gbs, dram_latency and clock_mhz)")
    else:
        max_out = int(_v(mo))
    opt = {k: (float(_v(m[k])) if m.get(k) is not None else None)
           for k in ("l2_bandwidth_bytes_per_clk", "local_latency", "const_latency")}
    for k in ("l2_partitions", "l2_partition_bytes", "l2_slices", "l1_mshr_lines", "icache_line_bytes",
              "icache_prefetch_lines"):
        if m.get(k) is not None:
            opt[k] = int(_v(m[k]))
    if m.get("l2_far_latency") is not None:
        opt["l2_far_latency"] = float(_v(m["l2_far_latency"]))
    if m.get("l2_partition_sms") is not None:
        opt["l2_partition_sms"] = _partition_sms(m["l2_partition_sms"], opt.get("l2_partitions", 1))
    if m.get("l1_caches_global_loads") is not None:
        opt["l1_caches_global_loads"] = bool(_v(m["l1_caches_global_loads"]))
    if m.get("tlb") is not None:
        opt["tlb"] = _build_tlb(m["tlb"])
    if m.get("dram_turnaround") is not None:
        t = m["dram_turnaround"]
        opt["dram_turnaround"] = DramTurnaround(read_to_write_ns=float(_v(t["read_to_write_ns"])),
                                                write_to_read_ns=float(_v(t["write_to_read_ns"])),
                                                write_batch_bytes=int(_v(t["write_batch_bytes"])))
    if m.get("dram_rows") is not None:
        r = m["dram_rows"]
        opt["dram_rows"] = DramRows(banks=int(_v(r["banks"])), row_bytes=int(_v(r["row_bytes"])),
                                    row_miss_ns=float(_v(r["row_miss_ns"])))
    return GlobalMemory(
        coalescing=m["coalescing"], segment_bytes=tuple(int(x) for x in _v(m["segment_bytes"])),
        dram_latency=float(_v(m["dram_latency"])), channels=int(_v(m["channels"])),
        interleave_bytes=int(_v(m["interleave_bytes"])), channel_hash=m["channel_hash"],
        bandwidth_gbs=float(_v(m["bandwidth_gbs"])), max_outstanding=max_out,
        sms_per_pipeline=sms_per_pipeline, l1=_build_cache(m.get("l1"), "l1"), l2=_build_cache(m.get("l2"), "l2"),
        **opt)


def _build_opcodes(section: dict, units: dict, latencies: dict) -> dict[str, OpInfo]:
    """Resolve ``opcodes.map`` entries (a class name, or ``{class: …, <field overrides>}`` or a
    full field set) against ``opcodes.classes`` and check the unit/latency references."""
    classes = section["classes"]
    for cname, cls in classes.items():
        _check_refs(cls, ("opcodes", "classes", cname), units, latencies)
    out: dict[str, OpInfo] = {}
    for key, entry in section["map"].items():
        p = ("opcodes", "map", str(key))
        if isinstance(entry, str):
            entry = {"class": entry}
        fields: dict[str, Any] = {}
        if "class" in entry:
            if entry["class"] not in classes:
                raise schema.SchemaViolation(p + ("class",), f"unknown opcode class {entry['class']!r}")
            fields.update({k: v for k, v in classes[entry["class"]].items() if k != "source"})
        fields.update({k: v for k, v in entry.items() if k not in ("class", "source")})
        missing = [f for f in schema.OPINFO_FIELDS if f not in fields]
        if missing:
            raise schema.SchemaViolation(p + (missing[0],), "missing key (give class: or all of "
                                         + ", ".join(schema.OPINFO_FIELDS) + ")")
        _check_refs(fields, p, units, latencies)
        out[str(key)] = OpInfo(**{f: fields[f] for f in schema.OPINFO_FIELDS},
                               width=int(_v(fields.get("width", 0))),
                               occupancy=float(_v(fields["occupancy"])) if "occupancy" in fields else None)
    return out


def _check_refs(fields: dict, p: tuple[str, ...], units: dict, latencies: dict) -> None:
    if "unit" in fields and fields["unit"] not in units:
        raise schema.SchemaViolation(p + ("unit",), f"unknown unit {fields['unit']!r} (units: {', '.join(units)})")
    if "latency" in fields and fields["latency"] not in latencies:
        raise schema.SchemaViolation(p + ("latency",),
                                     f"unknown latency class {fields['latency']!r} (latencies: {', '.join(latencies)})")
