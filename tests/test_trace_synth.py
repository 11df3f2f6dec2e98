"""Synthesizer of Accel-Sim ``.traceg`` text for the trace tests (features the real samples lack),
with the arrays a correct reader must produce computed independently of teg's reader/writer.

Other ``test_trace_*`` modules import from here; the tests below check the synthesizer itself
against hand-written text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# opcode → bytes per lane as the tracer computes it (hand-derived from get_datawidth_from_opcode,
# accel-sim-framework gpu-simulator/trace-parser/trace_parser.cc)
MEM_WIDTH = {"LDG.E.128.SYS": 16, "LDG.E.64": 8, "STG.E.SYS": 4, "LDG.E.U8": 1, "LDS.U.16": 2,
             "ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU": 4, "LDS.U.32": 4, "LD.E.64": 8, "STS.128": 16}
ALU_OPS = ["IMAD.MOV.U32", "FFMA", "ISETP.GE.AND", "BRA", "EXIT", "S2R", "HGMMA.64x128x16.F32", "UIADD3", "BAR.SYNC"]

REG_BASE = {"R": (0, 255), "P": (256, 7), "UR": (264, 63), "UP": (328, 7)}


def reg_flat(name: str) -> int:
    """Flat id (teg.sass.registers) of a register name; the zero/true registers give -1."""
    for kind in ("UR", "UP", "R", "P"):
        if name.startswith(kind) and name[len(kind):].isdigit():
            base, zero = REG_BASE[kind]
            n = int(name[len(kind):])
            return -1 if n == zero else base + n
    raise ValueError(name)


@dataclass
class Row:
    pc: int
    mask: int
    op: str
    dst: list[str] = field(default_factory=list)
    src: list[str] = field(default_factory=list)
    mem: bool = False
    mode: int = 1
    addrs: list[int] = field(default_factory=list)   # one per active lane, lane order
    imm: int | None = None
    line_num: int = 0
    imm2: int | None = None          # v6
    values: bool | None = None       # v6: True → "Val" block, False → "NoVal", None → nothing


def popcount(m: int) -> int:
    return bin(m & 0xFFFFFFFF).count("1")


def address_tokens(row: Row) -> str:
    k = popcount(row.mask)
    assert len(row.addrs) == k
    if row.mode == 0:
        return "0 " + " ".join(f"0x{a:016x}" for a in row.addrs)
    if row.mode == 1:
        if k == 0:
            return "1 0x0 0"
        stride = row.addrs[1] - row.addrs[0] if k > 1 else 0
        assert all(row.addrs[i] == row.addrs[0] + i * stride for i in range(k))
        return f"1 0x{row.addrs[0]:x} {stride}"
    assert row.mode == 2
    if k == 0:
        return "2 0x0"
    deltas = [row.addrs[i] - row.addrs[i - 1] for i in range(1, k)]
    return " ".join([f"2 0x{row.addrs[0]:x}"] + [str(d) for d in deltas])


def row_text(row: Row, version: int, lineinfo: bool, prefix: tuple[int, int, int, int]) -> str:
    t = []
    if version < 3:
        t += [str(v) for v in prefix]
    if lineinfo:
        t.append(str(row.line_num))
    t += [f"{row.pc:04x}", f"{row.mask:08x}", str(len(row.dst)), *row.dst, row.op, str(len(row.src)), *row.src]
    if version >= 6 and "GMMA" in row.op:
        t.append("1")
    if row.mem:
        t.append(f"{MEM_WIDTH[row.op]} {address_tokens(row)}")
    else:
        t.append("0")
    if row.imm is not None:
        t.append(str(row.imm))
    if version >= 6:
        if row.imm2 is not None:
            t.append(str(row.imm2))
        if row.values is True:
            t.append("Val")
            for k, _ in enumerate(row.dst + row.src):    # one broadcast value, or 32 lane values
                t.append("1 0xdeadbeef" if k % 2 == 0 else "32 " + " ".join(f"{v:x}" for v in range(32)))
        elif row.values is False:
            t.append("NoVal")
    return " ".join(t) + " "


@dataclass
class Block:
    xyz: tuple[int, int, int]
    warps: list[list[Row]]
    cluster: tuple[tuple[int, int, int], tuple[int, int, int], int] | None = None


def kernel_text(blocks: list[Block], *, grid=(4, 2, 1), block=(64, 1, 1), version=4, lineinfo=False,
                name="_Z4testPf", kid=1, binary=80, tracer_text: str | None = None) -> str:
    h = [f"-kernel name = {name}", f"-kernel id = {kid}", "-grid dim = ({},{},{})".format(*grid),
         "-block dim = ({},{},{})".format(*block), "-shmem = 128", "-nregs = 24", f"-binary version = {binary}",
         "-cuda stream id = 94811", "-shmem base_addr = 0x00007f0000000000",
         "-local mem base_addr = 0x00007eff00000000", "-nvbit version = 1.7",
         f"-accelsim tracer version = {tracer_text or version}", f"-enable lineinfo = {int(lineinfo)}", "",
         "#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width "
         "[adrrescompress?] [mem_addresses] immediate", "", ""]
    out = ["\n".join(h)]
    for b in blocks:
        out.append("\n#BEGIN_TB\n\nthread block = {},{},{}\n".format(*b.xyz))
        if b.cluster is not None:
            (cx, cy, cz), (ax, ay, az), rank = b.cluster
            out.append(f"cluster id = {cx},{cy},{cz}\ncluster cta = {ax},{ay},{az}\ncluster rank = {rank}\n")
        for j, rows in enumerate(b.warps):
            out.append(f"\nwarp = {j}\ninsts = {len(rows)}\n")
            for r in rows:
                out.append(row_text(r, version, lineinfo, (*b.xyz, j)) + "\n")
        out.append("\n#END_TB\n")
    return "".join(out)


def expected(blocks: list[Block], grid=(4, 2, 1), block=(64, 1, 1)) -> dict[str, np.ndarray]:
    """The columns a correct reader produces (model.py contract), computed from the Row objects."""
    wpb = (block[0] * block[1] * block[2] + 31) // 32
    cols: dict[str, list] = {k: [] for k in ("warp", "block", "pc", "opcode_text", "mask", "dst", "src",
                                              "mem_width", "imm", "line_num")}
    addr_start, addresses, warp_start = [0], [], [0]
    for bi, b in enumerate(blocks):
        lin = (b.xyz[2] * grid[1] + b.xyz[1]) * grid[0] + b.xyz[0]
        for j in range(wpb):
            rows = b.warps[j] if j < len(b.warps) else []
            for r in rows:
                cols["warp"].append(bi * wpb + j)
                cols["block"].append(lin)
                cols["pc"].append(r.pc)
                cols["opcode_text"].append(r.op)
                cols["mask"].append(r.mask)
                cols["dst"].append([reg_flat(x) for x in r.dst] + [-1] * (4 - len(r.dst)))
                cols["src"].append([reg_flat(x) for x in r.src] + [-1] * (8 - len(r.src)))
                cols["mem_width"].append(MEM_WIDTH[r.op] if r.mem else 0)
                cols["imm"].append(r.imm or 0)
                cols["line_num"].append(r.line_num)
                addresses += r.addrs if r.mem else []
                addr_start.append(len(addresses))
            warp_start.append(len(cols["pc"]))
    out = {k: np.array(v) for k, v in cols.items()}
    out["dst"] = np.array(cols["dst"], np.int64).reshape(-1, 4)
    out["src"] = np.array(cols["src"], np.int64).reshape(-1, 8)
    out["addr_start"] = np.array(addr_start, np.int64)
    out["addresses"] = np.array(addresses, np.uint64)
    out["warp_start"] = np.array(warp_start, np.int64)
    out["block_xyz"] = np.array([b.xyz for b in blocks], np.int64).reshape(-1, 3)
    return out


def assert_matches(kt, exp: dict[str, np.ndarray], line_num: bool = False) -> None:
    """Compare a KernelTrace with :func:`expected` output."""
    np.testing.assert_array_equal(np.asarray(kt.warp), exp["warp"].astype(np.int64))
    np.testing.assert_array_equal(np.asarray(kt.block), exp["block"].astype(np.int64))
    np.testing.assert_array_equal(np.asarray(kt.pc), exp["pc"].astype(np.int64))
    assert [kt.opcodes[i] for i in np.asarray(kt.opcode)] == list(exp["opcode_text"])
    np.testing.assert_array_equal(np.asarray(kt.mask), exp["mask"].astype(np.uint32))
    np.testing.assert_array_equal(np.asarray(kt.dst), exp["dst"])
    np.testing.assert_array_equal(np.asarray(kt.src), exp["src"])
    np.testing.assert_array_equal(np.asarray(kt.mem_width), exp["mem_width"].astype(np.int64))
    np.testing.assert_array_equal(np.asarray(kt.imm), exp["imm"].astype(np.int64))
    np.testing.assert_array_equal(np.asarray(kt.addr_start), exp["addr_start"])
    np.testing.assert_array_equal(np.asarray(kt.addresses), exp["addresses"])
    np.testing.assert_array_equal(np.asarray(kt.warp_start), exp["warp_start"])
    np.testing.assert_array_equal(np.asarray(kt.block_xyz), exp["block_xyz"])
    if line_num:
        np.testing.assert_array_equal(np.asarray(kt.line_num), exp["line_num"].astype(np.int64))


# ---- the synthesizer's own checks -----------------------------------------------------------------

def test_row_text_matches_tracer_examples():
    # lines in the tracer's format (versions 3-5), modelled on real tracer output
    r = Row(0x98, 0xFFFFFFFF, "LDG.E.64", ["R4"], ["R4"], mem=True, mode=1, addrs=[0x7FD165500000 + 8 * i for i in range(32)])
    assert row_text(r, 4, False, (0, 0, 0, 0)) == "0098 ffffffff 1 R4 LDG.E.64 1 R4 8 1 0x7fd165500000 8 "
    r = Row(0x1A0, 0x1, "STG.E.SYS", [], ["R2", "R11"], mem=True, mode=2, addrs=[0x7FB01FE00C00])
    assert row_text(r, 3, False, (0, 0, 0, 0)) == "01a0 00000001 0 STG.E.SYS 2 R2 R11 4 2 0x7fb01fe00c00 "
    r = Row(0x50, 0, "BRA", imm=528)
    assert row_text(r, 5, False, (0, 0, 0, 0)) == "0050 00000000 0 BRA 0 0 528 "


def test_mode2_tokens_have_popcount_minus_one_deltas():
    r = Row(0x10, 0b1011, "LDG.E.64", ["R2"], ["R4"], mem=True, mode=2, addrs=[1000, 1016, 992])
    assert address_tokens(r) == "2 0x3e8 16 -24"


def test_expected_columns_for_a_hand_example():
    b = Block((1, 0, 0), [[Row(0x10, 0x3, "LDG.E.64", ["R2"], ["R255"], mem=True, mode=0, addrs=[8, 64])], []])
    exp = expected([b], grid=(2, 1, 1), block=(64, 1, 1))
    assert exp["warp"].tolist() == [0] and exp["block"].tolist() == [1]
    assert exp["src"][0].tolist() == [-1] * 8 and exp["dst"][0].tolist() == [2, -1, -1, -1]
    assert exp["addr_start"].tolist() == [0, 2] and exp["warp_start"].tolist() == [0, 1, 1]
