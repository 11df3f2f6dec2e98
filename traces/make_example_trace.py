"""Generate the bundled example trace: ``matmul_abt`` (the TEG report's C = A·Bᵀ with its
shared-memory bank conflict, tests/fixtures/sass/kernels.cu) on sm_90, n = 32, block 16×16
(8 warps), grid 2×2 (4 blocks, 32 warps — kept small).

Inputs in this folder: ``matmul_abt.sm_90.sass`` (nvcc 13.0 ``-arch=sm_90``, ``cuobjdump -sass``,
copied from tests/fixtures/sass/kernels.sm_90.sass) and ``kernels.sm_90.cubin`` (the same
compilation, copied from tests/fixtures/sass/).

Two ways to produce the trace, which must agree (tests/test_engine_example.py checks it):

* default — teg's functional emulator (:func:`teg.emu.run`) executes the cubin's SASS for every
  block and records the trace (this is what ``matmul_abt.sm_90.trace.npz`` holds);
* ``--walk`` — the method used before the emulator existed: walk the SASS's control flow and
  compute every memory instruction's per-lane addresses from the CUDA source::

    row = blockIdx.y*16 + ty;  col = blockIdx.x*16 + tx
    for t in 0 .. n/16-1:
        As[ty][tx] = A[row*n + t*16 + tx]                  # LDG.E  @0x250 → STS [R23] @0x2c0
        Bs[ty][tx] = B[(blockIdx.x*16 + ty)*n + t*16 + tx]  # LDG.E  @0x260 → STS [R22] @0x2d0
        __syncthreads()                                     # BAR    @0x2e0
        acc += As[ty][k] * Bs[tx][k], k = 0..15             # LDS.128 [R24+4k'] (As row ty),
                                                            # LDS.128 [R21+4k'] (Bs row tx: the
                                                            # conflict — 16 lanes, stride 64 B)
        __syncthreads()                                     # BAR    @0x470
    C[row*n + col] = acc                                    # STG.E  @0x490

  Shared memory on sm_90 starts after the 1 KB the driver reserves (``UMOV UR4, 0x400``): As at
  0x400, Bs at 0x800. Register lists come from the SASS; predicated-off instructions (``@!P0 BRA``
  not taken) have mask 0, as the Accel-Sim tracer prints them. The per-PC layout is checked
  against the SASS, so a different compilation fails loudly instead of producing a wrong trace.

Run ``python traces/make_example_trace.py`` to regenerate ``traces/matmul_abt.sm_90.trace.npz``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SASS = HERE / "matmul_abt.sm_90.sass"
CUBIN = HERE / "kernels.sm_90.cubin"
OUT = HERE / "matmul_abt.sm_90.trace.npz"

N = 32
TILE = 16
GRID = (N // TILE, N // TILE)
BLOCK = (TILE, TILE)
A_BASE, B_BASE, C_BASE = 0x7F0000000000, 0x7F0000100000, 0x7F0000200000
AS_BASE, BS_BASE = 0x400, 0x800

# PC → (opcode prefix expected in the SASS, address function of (lane tx, ty, bx, by, t))
MEMORY = {
    0x250: ("LDG", lambda tx, ty, bx, by, t: A_BASE + 4 * ((by * TILE + ty) * N + t * TILE + tx)),
    0x260: ("LDG", lambda tx, ty, bx, by, t: B_BASE + 4 * ((bx * TILE + ty) * N + t * TILE + tx)),
    0x2C0: ("STS", lambda tx, ty, bx, by, t: AS_BASE + 4 * (ty * TILE + tx)),
    0x2D0: ("STS", lambda tx, ty, bx, by, t: BS_BASE + 4 * (ty * TILE + tx)),
    0x2F0: ("LDS", lambda tx, ty, bx, by, t: BS_BASE + 64 * tx + 0x00),
    0x300: ("LDS", lambda tx, ty, bx, by, t: AS_BASE + 64 * ty + 0x00),
    0x310: ("LDS", lambda tx, ty, bx, by, t: BS_BASE + 64 * tx + 0x10),
    0x330: ("LDS", lambda tx, ty, bx, by, t: AS_BASE + 64 * ty + 0x10),
    0x370: ("LDS", lambda tx, ty, bx, by, t: AS_BASE + 64 * ty + 0x20),
    0x390: ("LDS", lambda tx, ty, bx, by, t: BS_BASE + 64 * tx + 0x20),
    0x3D0: ("LDS", lambda tx, ty, bx, by, t: AS_BASE + 64 * ty + 0x30),
    0x3F0: ("LDS", lambda tx, ty, bx, by, t: BS_BASE + 64 * tx + 0x30),
    0x490: ("STG", lambda tx, ty, bx, by, t: C_BASE + 4 * ((by * TILE + ty) * N + bx * TILE + tx)),
}
SKIP_BRANCH = 0x0E0      # @!P0 BRA 0x490: P0 = (n >= 16) is true, so never taken
LOOP_BRANCH = 0x480      # @!P0 BRA 0x240: P0 = (n/16 <= t+1), taken while iterations remain
LOOP_HEAD = 0x240


def _walk(program):
    """Static instruction indices of one warp's dynamic path and the loop counter ``t`` at each
    row, plus the guard-true flag of each row (the kernel's control flow is the same for every
    warp)."""
    pcs = program.pc_index()
    i = 0
    t = 0
    path = []
    while True:
        ins = program.instructions[i]
        a = ins.address
        if a in MEMORY and not ins.base.startswith(MEMORY[a][0]):
            raise SystemExit(f"{SASS}: expected {MEMORY[a][0]} at /*{a:04x}*/, found {ins.opcode}: SASS changed")
        if a == SKIP_BRANCH:
            path.append((i, t, False))
            i += 1
            continue
        if a == LOOP_BRANCH:
            taken = N // TILE > t + 1
            path.append((i, t, taken))
            if taken:
                t += 1
                i = pcs[LOOP_HEAD]
            else:
                i += 1
            continue
        path.append((i, t, True))
        if ins.base == "EXIT":
            return path
        i += 1


def walked_trace():
    """The trace by walking the SASS with the source's address formulas (``--walk``)."""
    sys.path.insert(0, str(HERE.parent))
    from teg.sass import parse_file
    from teg.trace import KernelInfo, KernelTrace, Trace
    from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC

    program = next(p for p in parse_file(SASS) if p.name == "matmul_abt")
    path = _walk(program)
    opcodes = sorted({ins.opcode for ins in program.instructions})
    op_index = {op: k for k, op in enumerate(opcodes)}
    warps_per_block = BLOCK[0] * BLOCK[1] // 32
    cols = {k: [] for k in ("warp", "block", "pc", "opcode", "mask", "dst", "src", "mem_width")}
    naddr, addresses, warp_start, warp_block, block_xyz = [], [], [0], [], []
    lane = np.arange(32)
    for by in range(GRID[1]):
        for bx in range(GRID[0]):
            b = by * GRID[0] + bx
            block_xyz.append((bx, by, 0))
            for w in range(warps_per_block):
                tid = w * 32 + lane
                tx, ty = tid % TILE, tid // TILE
                for i, t, guard in path:
                    ins = program.instructions[i]
                    mask = 0xFFFFFFFF if guard else 0
                    dst = np.full(MAX_TRACE_DST, -1, np.int16)
                    src = np.full(MAX_TRACE_SRC, -1, np.int16)
                    d, s = ins.dst_regs[:MAX_TRACE_DST], ins.src_regs[:MAX_TRACE_SRC]
                    dst[:len(d)], src[:len(s)] = d, s
                    cols["warp"].append(b * warps_per_block + w)
                    cols["block"].append(b)
                    cols["pc"].append(ins.address)
                    cols["opcode"].append(op_index[ins.opcode])
                    cols["mask"].append(mask)
                    cols["dst"].append(dst)
                    cols["src"].append(src)
                    mem = MEMORY.get(ins.address)
                    cols["mem_width"].append(ins.mem_width if mem else 0)
                    if mem and guard:
                        addresses.append(np.array([mem[1](int(x), int(y), bx, by, t) for x, y in zip(tx, ty)],
                                                  np.uint64))
                        naddr.append(32)
                    else:
                        naddr.append(0)
                warp_start.append(len(cols["pc"]))
                warp_block.append(b)
    nrows = len(cols["pc"])
    addr_start = np.zeros(nrows + 1, np.int64)
    np.cumsum(naddr, out=addr_start[1:])
    max_reg = max(r for ins in program.instructions for r in ins.dst_regs + ins.src_regs if r < 255)
    info = KernelInfo(name="matmul_abt", kernel_id=1, grid=(GRID[0], GRID[1], 1), block=(BLOCK[0], BLOCK[1], 1),
                      shmem=2 * TILE * TILE * 4, nregs=max_reg + 1, binary_version=90, shmem_base=0,
                      tracer_version=0, nvbit_version="teg traces/make_example_trace.py")
    kt = KernelTrace(
        info=info, opcodes=opcodes, warp=np.asarray(cols["warp"], np.int32), block=np.asarray(cols["block"], np.int32),
        pc=np.asarray(cols["pc"], np.int64), opcode=np.asarray(cols["opcode"], np.int32),
        mask=np.asarray(cols["mask"], np.uint32), dst=np.asarray(cols["dst"], np.int16),
        src=np.asarray(cols["src"], np.int16), mem_width=np.asarray(cols["mem_width"], np.int16),
        imm=np.zeros(nrows, np.int64), addr_start=addr_start,
        addresses=np.concatenate(addresses) if addresses else np.zeros(0, np.uint64),
        warp_start=np.asarray(warp_start, np.int64), warp_block=np.asarray(warp_block, np.int32),
        block_xyz=np.asarray(block_xyz, np.int32))
    trace = Trace(kernels=[kt], source=str(OUT))
    return trace


def emulated_trace():
    """The trace recorded by teg's functional emulator running the cubin (the default)."""
    sys.path.insert(0, str(HERE.parent))
    from teg.emu import run

    n = N * N
    args = [f"A=rand:float32:{n}", f"B=rand:float32:{n}", f"C=zeros:float32:{n}", f"n={N}"]
    result = run(CUBIN, "matmul_abt", f"{GRID[0]},{GRID[1]}", f"{BLOCK[0]},{BLOCK[1]}", args, sass=SASS)
    return result.trace


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description="Regenerate the bundled example trace (matmul_abt, sm_90).")
    ap.add_argument("--walk", action="store_true",
                    help="walk the SASS with the source's address formulas instead of emulating it")
    ap.add_argument("-o", "--out", type=Path, default=OUT, help=f"output .npz (default: {OUT.name} here)")
    opts = ap.parse_args(argv)
    trace = walked_trace() if opts.walk else emulated_trace()
    from teg.trace import save
    out = opts.out
    if out.exists():
        out.unlink()
    save(trace, out)
    kt = trace.kernels[0]
    print(f"wrote {out}: {kt.num_rows} rows, {kt.num_warps} warps, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
