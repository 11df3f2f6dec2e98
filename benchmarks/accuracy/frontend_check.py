"""Bounds on two front-end mechanisms teg does not model, replayed on teg's own schedule of a kernel.

    python3 benchmarks/accuracy/frontend_check.py TRACE_DIR --kernel NAME [--machine quadro_gv100] [--sms 4]

The kernel is estimated once (every SM, the default options) with per-row records; the rows the
first ``--sms`` SMs issued are then replayed, per scheduler in issue order, through

* **an L0 instruction cache per scheduler** (fully associative, LRU, lines of the table's
  ``memory.icache_line_bytes``) for each capacity of ``--l0-kb``. A warp's consecutive
  instructions in one line are one fetch. Misses beyond the infinite cache's (the compulsory ones,
  which teg models as the cold fetch, docs/model.md §2) are capacity misses; each would cost an L1
  instruction-cache hit, not an L2 trip. NVIDIA publishes no L0 size; Jia et al. 2018/2019 report
  12 KiB per partition on V100 and 16 KiB on T4 (recalled, the sweep shows the sensitivity), and
  Huerta et al. (MICRO 2025, "Dissecting and Modeling the Architecture of Modern GPU Cores" §5.2,
  §7.3) find a stream-buffer prefetcher of 8 lines that "behaves close to a perfect instruction
  cache";
* **the register file's read ports** (Huerta et al. §5.3: two banks per sub-core, bank = register
  mod 2 as in Jia et al. 2018, one 1024-bit warp register per bank per cycle; a fixed-latency
  instruction is held at issue until all its operands can be read in the next three cycles; a
  register-file cache entry per bank and operand slot serves a source of the same warp, register
  and slot that an earlier instruction marked ``.reuse``, and any read of that bank and slot
  replaces it). Instructions of SM-shared units (memory, branch unit) read later, behind the MIO
  queue, and are not charged. A 64-bit operand reads both banks. The delays push the scheduler's
  later issues (an upper bound: a real scheduler could issue another warp meanwhile; a lower one
  for a delayed warp's own dependants, which are not pushed).

It prints, per mechanism, what share of the scheduler's issue span the mechanism could add.
"""

from __future__ import annotations

import argparse
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def lru_line_misses(warps, lines, capacity: int) -> tuple[int, int]:
    """(fetches, misses) of one scheduler's instruction stream (``warps[i]`` issued an instruction
    of code line ``lines[i]``, in issue order) through a fully associative LRU cache of
    ``capacity`` lines; a warp's consecutive instructions in the same line are one fetch."""
    lru: OrderedDict = OrderedDict()
    last: dict = {}
    fetches = misses = 0
    for w, line in zip(warps, lines):
        if last.get(w) == line:
            continue
        last[w] = line
        fetches += 1
        if line in lru:
            lru.move_to_end(line)
        else:
            misses += 1
            lru[line] = True
            if len(lru) > capacity:
                lru.popitem(last=False)
    return fetches, misses


def port_replay(issues, warps, sources, fixed, window: int = 3) -> dict:
    """Replay one scheduler's issue sequence through two register banks that read one warp
    register per cycle each. ``sources[i]``: the (slot, register, reuse) reads of instruction i
    (a 64-bit operand listed as its two registers, same slot); ``fixed[i]``: it must read them all
    in the ``window`` cycles after issue (else it waits at issue). Returns the reads, register-file
    cache hits, delayed instructions and the cycles the delays pushed the last issue."""
    busy: set = set()
    rfc: dict = {}
    shift = 0
    prev = None
    reads = hits = delayed = 0
    for t0, w, srcs, fx in zip(issues, warps, sources, fixed):
        t = t0 + shift
        if prev is not None and t <= prev:
            t = prev + 1
        need = [0, 0]
        for slot, reg, reuse in srcs:
            key = (reg & 1, slot)
            if rfc.get(key) == (w, reg):
                hits += 1
            else:
                need[reg & 1] += 1
                reads += 1
            if reuse:
                rfc[key] = (w, reg)
            else:
                rfc.pop(key, None)
        if fx:
            tt = t
            while any(sum((b, tt + c) not in busy for c in range(1, window + 1)) < need[b] for b in (0, 1)):
                tt += 1
            for b in (0, 1):
                n, c = need[b], 1
                while n:
                    if (b, tt + c) not in busy:
                        busy.add((b, tt + c))
                        n -= 1
                    c += 1
            if tt > t:
                delayed += 1
                shift += tt - t
                t = tt
        prev = t
    return {"reads": reads, "rfc_hits": hits, "delayed": delayed, "push": shift}


def instruction_sources(program) -> list[list[tuple[int, int, bool]]]:
    """Per static instruction: its general-register source reads (slot, register, reuse flag),
    RZ excluded, a 64- or 128-bit operand as its registers (all in the operand's slot: the parser
    lists a wide operand's further registers only in ``src_regs``; when the operands' widths are not
    all equal the wide one is taken to be the last, as in IMAD.WIDE's addend or a store's data).
    The registers of a memory operand's address are left out: they are read behind the MIO queue."""
    out = []
    for ins in program.instructions:
        ops = ins.operands[1:] if ins.dst_regs else ins.operands
        regs = [(slot, o) for slot, o in enumerate(ops) if o.kind == "reg" and o.reg is not None and 0 <= o.reg < 255]
        addr = sum(1 for o in ops if o.kind == "mem" for r in o.regs if 0 <= r < 255)
        extra = sum(1 for r in ins.src_regs if 0 <= r < 255) - addr - len(regs)
        widths = [1] * len(regs)
        if regs and extra > 0:
            if extra % len(regs) == 0:
                widths = [1 + extra // len(regs)] * len(regs)
            else:
                widths[-1] += extra
        out.append([(slot, o.reg + k, bool(o.reuse)) for (slot, o), w in zip(regs, widths) for k in range(w)])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", help="teg native trace folder (with program.sass)")
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--machine", default="quadro_gv100")
    ap.add_argument("--sms", type=int, default=4, help="SMs whose schedulers are replayed (default 4)")
    ap.add_argument("--l0-kb", default="8,12,16,32", help="L0 capacities to try, KiB")
    a = ap.parse_args(argv)

    from teg.engine import Options
    from teg.engine.kernel_inputs import load_inputs
    from teg.engine.records import TL_ISSUE, TL_SCHED, with_records
    from teg.engine.runner import run_kernel

    sass = Path(a.trace) / "program.sass"
    inp = load_inputs(sass=sass if sass.exists() else None, trace=a.trace, machine=a.machine, kernel=a.kernel)
    if inp.program is None:
        print(f"{a.trace}: no program.sass beside the trace: the replay needs the SASS operands", file=sys.stderr)
        return 2
    est = run_kernel(inp, Options(), prepare=lambda x: with_records(x, timeline=True))
    res, low = est.result, est.lowered
    rec, grid, st = res.row_record, low.grid, low.static
    row_ctx = np.empty(rec.shape[0], np.int64)
    for c in range(len(grid.c_start)):
        row_ctx[grid.c_start[c]:grid.c_end[c]] = c
    issue, sched = rec[:, TL_ISSUE], rec[:, TL_SCHED].astype(np.int64)
    nsched = a.sms * 4
    sel = np.nonzero((sched >= 0) & (sched < nsched))[0]
    order = sel[np.lexsort((issue[sel], sched[sel]))]
    sidx = low.rows.r_sidx
    srcs = instruction_sources(inp.program)
    fixed_static = (st.u_per_sm[st.s_unit] == 0) & (st.s_wbar == 7) & (st.s_rbar == 7)
    line_bytes = inp.machine.memory.icache_line_bytes if inp.machine.memory.icache_line_bytes else 128
    lines = st.s_iline if st.s_iline.max() >= 0 else np.arange(len(srcs)) * 16 // line_bytes
    caps = [int(x) for x in a.l0_kb.split(",")]

    ssorted = sched[order]
    span = 0.0
    fetch = {c: [0, 0] for c in caps + [1 << 30]}
    ports = {"reads": 0, "rfc_hits": 0, "delayed": 0, "push": 0}
    nrows = nfixed = 0
    for s in range(nsched):
        idx = order[np.searchsorted(ssorted, s):np.searchsorted(ssorted, s, "right")]
        if not idx.size:
            continue
        nrows += idx.size
        span += issue[idx[-1]] - issue[idx[0]] + 1
        w = row_ctx[idx]
        ln = lines[sidx[idx]]
        for c in fetch:
            f, m = lru_line_misses(w.tolist(), ln.tolist(), c * 1024 // line_bytes if c < (1 << 30) else c)
            fetch[c][0] += f
            fetch[c][1] += m
        fx = fixed_static[sidx[idx]]
        nfixed += int(fx.sum())
        r = port_replay(issue[idx].tolist(), w.tolist(), [srcs[i] for i in sidx[idx]], fx.tolist())
        for k in ports:
            ports[k] += r[k]
    per = max(1, len([s for s in range(nsched) if np.any(ssorted == s)]))
    print(f"{inp.program.name}: {res.cycles} cycles; replayed {nrows:,} rows on {per} schedulers "
          f"(mean issue span {span / per:,.0f} cycles); code {len(srcs) * 16:,} B = {int(lines.max()) + 1} lines of {line_bytes} B")
    comp = fetch[1 << 30][1]
    print(f"L0 instruction cache (per scheduler, LRU): {fetch[1 << 30][0]:,} line fetches, {comp:,} compulsory misses")
    for c in caps:
        cap_m = fetch[c][1] - comp
        print(f"  {c:3d} KiB: {fetch[c][1]:,} misses, {cap_m:,} capacity misses = {cap_m / per:,.0f} per scheduler, "
              f"{1000 * cap_m / max(nrows, 1):.1f} per 1000 instructions")
    print(f"register-file read ports: {nfixed:,} fixed-latency instructions, {ports['reads']:,} reads, "
          f"{ports['rfc_hits']:,} register-cache hits, {ports['delayed']:,} instructions delayed, "
          f"{ports['push'] / per:,.1f} cycles pushed per scheduler ({ports['push'] / max(span, 1):.4f} of the span)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
