"""Accel-Sim / NVBit trace text: reader (→ native format, streaming) and writer (native → text).

Inputs: ``kernelslist.g`` (``MemcpyHtoD,0x<addr>,<bytes>`` lines and kernel file names), and
``kernel-N.traceg`` files, plain or ``.xz``, of tracer versions 1.2, 3, 4, 5 and the version-6
text headers (docs/formats.md "Accel-Sim reader"; the format as the tracer writes it and
Accel-Sim reads it: accel-sim-framework util/tracer_nvbit/tracer_tool/tracer_tool.cu and gpu-simulator/trace-parser/trace_parser.cc).

Mechanism: the ``-key = value`` header is parsed in Python; the body is read in large blocks cut at
line boundaries and handed to the numba scanner (:mod:`teg.trace.scanner`), whose output columns
are streamed into a :class:`teg.trace.native.KernelWriter`. Memory use is bounded by the block
size and the scanner's output capacity, not by the trace size.
"""

from __future__ import annotations

import lzma
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from teg import fileio
from teg.trace import nvbit_view
from teg.trace import scanner as S
from teg.trace.errors import TraceFormatError, TraceUnsupportedError
from teg.textfile import TextFileError, read_text
from teg.trace.checks import INFO_RANGES, MAX_MEM_WIDTH
from teg.trace.model import KernelInfo, KernelTrace, Trace, launch_problem
from teg.trace.native import KernelWriter, TraceWriter, replaceable
from teg.trace.textwriter import format_rows

# Version of what this reader makes of the same text: part of every trace-cache key
# (teg.trace.cache), so a reader that changes what it produces never reuses an older conversion.
READER_VERSION = 1
CHUNK_BYTES = 32 << 20     # text block handed to the scanner
ROW_CAP = 1 << 19          # scanner output rows per flush
ADDR_CAP = 1 << 22         # scanner output addresses per flush
REC_CAP = 1 << 16          # warp / block records per flush
MAX_OPCODES = 1 << 15      # distinct opcode texts per kernel

TRACE_SUFFIXES = (".traceg", ".traceg.xz")


# ---- small pure helpers -------------------------------------------------------------------------

def opcode_width(opcode: str) -> int:
    """Bytes per lane of a memory opcode, the tracer's rule (``get_datawidth_from_opcode``): the first
    ``.``-token that is all digits gives bits, else the first ``U<digits>`` token; default 4 bytes
    (``LDG.E.128`` → 16, ``LD.E.64`` → 8, ``LDG.E.U8`` → 1, ``STG.E.SYS`` → 4)."""
    toks = opcode.split(".")
    for t in toks:
        if t.isdigit():
            return max(1, _bits(t) // 8)
    for t in toks:
        if len(t) > 1 and t[0] == "U" and t[1:].isdigit():
            return max(1, _bits(t[1:]) // 8)
    return 4


def _bits(digits: str) -> int:
    """A bit count written in an opcode (a damaged one may carry thousands of digits: any count
    beyond six digits is reported as 2**24, which no width check accepts)."""
    return int(digits) if len(digits) <= 6 else 1 << 24


def is_xz(path: str | os.PathLike) -> bool:
    return str(path).endswith(".xz")


def _open_binary(path: Path):
    """(raw file, decoded stream): the raw handle reports compressed progress for ``.xz``."""
    raw = open(path, "rb")
    return raw, (lzma.LZMAFile(raw) if is_xz(path) else raw)


# ---- kernelslist.g ------------------------------------------------------------------------------

MAX_KERNELSLIST_BYTES = 1 << 26     # about a million kernel launches
_MEMCPY = re.compile(r"^MemcpyHtoD\s*,\s*(0[xX])?([0-9a-fA-F]{1,16})\s*,\s*(\d{1,19})\s*$")   # 64-bit fields


def read_kernelslist(path: str | os.PathLike,
                     missing: list[tuple[Path, int]] | None = None) -> tuple[list[Path], list[tuple[int, int]]]:
    """Kernel files (resolved next to the list) and ``MemcpyHtoD`` copies of a ``kernelslist.g``.
    A listed kernel file that is not there is an error, unless ``missing`` is a list: then its
    (path, line) is appended there and the file is left out of the result."""
    p = Path(path)
    files: list[Path] = []
    memcpy: list[tuple[int, int]] = []
    try:
        text = read_text(p, MAX_KERNELSLIST_BYTES, "kernel list")
    except TextFileError as exc:
        raise TraceFormatError(f"not a readable kernel list: {exc.problem}", str(p), exc.line) from None
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if s.startswith("MemcpyHtoD"):
            m = _MEMCPY.match(s)
            if not m:
                raise TraceFormatError(f"malformed copy line {s[:80]!r} (expected MemcpyHtoD,0x<address>,<bytes>)", str(p), n)
            memcpy.append((int(m.group(2), 16), int(m.group(3))))
        elif s.startswith("Memcpy"):
            continue    # other copy directions: the simulator ignores them too
        elif s.startswith("kernel"):
            kf = p.parent / s
            if s.endswith(".tracez"):
                raise TraceUnsupportedError(f"{s}: .tracez (Accel-Sim 2.0 binary) traces are not supported; "
                                            "convert them to .traceg with traceDsm", str(p), n)
            if not s.endswith(TRACE_SUFFIXES):
                raise TraceFormatError(f"{s}: not a post-processed .traceg[.xz] kernel trace "
                                       "(run Accel-Sim's post-traces-processing first)", str(p), n)
            if not kf.exists():
                if missing is not None:
                    missing.append((kf, n))
                    continue
                raise TraceFormatError(f"kernel file {s} not found (looked for {kf})", str(p), n)
            if missing is None:
                _regular(kf)          # a pipe or device listed: refused by name (an application: that kernel fails)
            files.append(kf)
        else:
            raise TraceFormatError(f"unexpected line {s[:80]!r} (expected MemcpyHtoD,… or kernel-N.traceg)", str(p), n)
    return files, memcpy


# ---- kernel header ------------------------------------------------------------------------------

# header keys the launch shape and the occupancy depend on: every tracer version writes them (a
# missing one would silently become a default)
REQUIRED_HEADER = ("grid dim", "block dim", "shmem", "nregs")
MAX_HEADER_LINE = 1 << 16
_DEC = re.compile(r"-?\d{1,20}$")
_HEX = re.compile(r"(?:0[xX])?[0-9a-fA-F]{1,16}$")
_VERSION = re.compile(r"\d{1,3}(?:\.\d{1,3})?$")
# header key → (KernelInfo field, base of its number)
_HEADER_INTS = {"kernel id": ("kernel_id", 10), "shmem": ("shmem", 10), "nregs": ("nregs", 10),
                "binary version": ("binary_version", 10), "cuda stream id": ("stream", 10),
                "shmem base_addr": ("shmem_base", 16), "local mem base_addr": ("local_base", 16)}


def _header_int(val: str, base: int, field: str) -> int:
    """A header number in ``base``, within the range :data:`teg.trace.checks.INFO_RANGES` gives
    ``field``; raises ValueError naming the range."""
    if not (_DEC if base == 10 else _HEX).match(val):
        raise ValueError("not a number")
    v = int(val, base)
    lo, hi = INFO_RANGES[field]
    if not lo <= v <= hi:
        raise ValueError(f"must be in [{lo}, {hi}]")
    return v


def _parse_header_line(info: KernelInfo, line: str, where: str, n: int) -> str:
    """Apply one ``-key = value`` header line to ``info`` (unknown keys are ignored, as Accel-Sim
    does); return the key. Values are checked: numbers in range, grid and block within CUDA's
    launch limits."""
    if "=" not in line:
        raise TraceFormatError(f"malformed header line {line[:80]!r} (expected '-key = value')", where, n)
    key, _, val = line[1:].partition("=")
    key = " ".join(key.split())
    val = val.strip()
    why = ""
    try:
        if key == "kernel name":
            info.name = val
        elif key in _HEADER_INTS:
            field, base = _HEADER_INTS[key]
            setattr(info, field, _header_int(val, base, field))
        elif key in ("grid dim", "block dim"):
            parts = val.strip("()").split(",")
            if len(parts) != 3 or not all(_DEC.match(x.strip()) for x in parts):
                raise ValueError("expected (x,y,z)")
            dims = tuple(int(x) for x in parts)
            problem = launch_problem(dims, (1, 1, 1)) if key == "grid dim" else launch_problem((1, 1, 1), dims)
            if problem:
                raise ValueError(problem)
            if key == "grid dim":
                info.grid = dims
            else:
                info.block = dims
        elif key == "nvbit version":
            info.nvbit_version = val
        elif key == "accelsim tracer version":
            if not _VERSION.match(val):
                raise ValueError("expected a version such as 5 or 1.2")
            info.tracer_version = int(float(val))      # "1.2" → 1, like the simulator's %d
        elif key == "enable lineinfo":
            if val not in ("0", "1"):
                raise ValueError("expected 0 or 1")
            info.lineinfo = val == "1"
    except ValueError as exc:
        why = str(exc)
    if why:
        raise TraceFormatError(f"bad value {val[:80]!r} for header key {key!r} ({why})", where, n)
    return key


def read_header(stream, where: str) -> tuple[KernelInfo, int, bytes]:
    """Read the header lines; return (info, lines consumed, bytes to hand to the body scanner).
    Lines must be UTF-8 and at most :data:`MAX_HEADER_LINE` bytes; the keys of
    :data:`REQUIRED_HEADER` must be present and the block must fit CUDA's thread limit."""
    info = KernelInfo(name="")
    seen: set[str] = set()
    n = 0
    while True:
        raw = stream.readline(MAX_HEADER_LINE + 1)
        if not raw:
            raise TraceFormatError("truncated: the file ends inside the kernel header (no '#' line follows it)", where, n or None)
        n += 1
        if len(raw) > MAX_HEADER_LINE:
            raise TraceFormatError(f"header line longer than {MAX_HEADER_LINE:,} bytes", where, n)
        try:
            s = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise TraceFormatError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                                   where, n) from None
        if not s:
            continue
        if s.startswith("#"):
            missing = [k for k in REQUIRED_HEADER if k not in seen]
            if missing:
                raise TraceFormatError("the kernel header has no " + ", ".join(f"'-{k} = …'" for k in missing)
                                       + " line (the NVBit tracer writes them)", where, n)
            problem = launch_problem(info.grid, info.block)
            if problem:
                raise TraceFormatError(f"kernel header: {problem}", where, n)
            if s.startswith("#BEGIN_TB"):
                return info, n - 1, raw
            return info, n, b""
        if not s.startswith("-"):
            raise TraceFormatError(f"unexpected line {s[:80]!r} in the kernel header", where, n)
        seen.add(_parse_header_line(info, s, where, n))


# ---- body scanning ------------------------------------------------------------------------------

_MESSAGES = {
    S.E_SYNTAX: "cannot parse line {text!r}",
    S.E_MODE: "unknown address mode {arg} in {text!r} (Accel-Sim modes: 0 list, 1 base+stride, 2 base+deltas)",
    S.E_TMA_MODE: "TMA address mode {arg} (Hopper bulk-tensor copy) is not supported: {text!r}",
    S.E_TMA_OP: "TMA instruction (version-6 bulk-copy address block) is not supported: {text!r}",
    S.E_OUTSIDE: "instruction line outside a warp (no 'warp =' and 'insts =' before it): {text!r}",
    S.E_NREGS: "{arg} registers in one list (at most 4 destinations / 8 sources): {text!r}",
    S.E_REG: "register out of range in {text!r}",
    S.E_WARP_RANGE: "warp {arg} out of range: the block dim gives {wpb} warps per block",
    S.E_GRID: "thread block outside the grid {grid}: {text!r}",
    S.E_WARP_ORDER: "warp {arg} listed after a warp with a higher or equal id",
    S.E_OPTABLE: f"more than {MAX_OPCODES} distinct opcodes in one kernel",
    S.E_HEADER: "header line inside the trace body (two kernels in one file?): {text!r}",
    S.E_MASK: "active mask wider than 32 bits: {text!r}",
}
_NEST = {0: "#BEGIN_TB inside an open thread block (missing #END_TB)",
         1: "#END_TB without #BEGIN_TB / 'thread block ='",
         2: "{text!r} outside a #BEGIN_TB block (or after the block's warps began)",
         3: "'insts =' without a preceding 'warp =' line",
         4: "'warp =' without an 'insts =' line"}


class _Scan:
    """Scanner output buffers and per-kernel intern tables."""

    def __init__(self, row_cap: int = ROW_CAP, addr_cap: int = ADDR_CAP):
        self.o_warp = np.empty(row_cap, np.int32)
        self.o_block = np.empty(row_cap, np.int32)
        self.o_pc = np.empty(row_cap, np.int64)
        self.o_opc = np.empty(row_cap, np.int32)
        self.o_mask = np.empty(row_cap, np.uint32)
        self.o_dst = np.empty((row_cap, S.MAX_DST), np.int16)
        self.o_src = np.empty((row_cap, S.MAX_SRC), np.int16)
        self.o_memf = np.empty(row_cap, np.int8)
        self.o_imm = np.empty(row_cap, np.int64)
        self.o_line = np.empty(row_cap, np.int32)
        self.o_nad = np.empty(row_cap, np.int32)
        self.o_addr = np.empty(addr_cap, np.int64)
        self.wrec = np.empty((REC_CAP, S.WREC), np.int64)
        self.brec = np.empty((REC_CAP, S.BREC), np.int64)
        self.reset_opcodes()

    def reset_opcodes(self) -> None:
        self.hkeys = np.zeros(4 * MAX_OPCODES, np.int64)
        self.hvals = np.full(4 * MAX_OPCODES, -1, np.int32)
        self.pool = np.zeros(64 * MAX_OPCODES, np.uint8)
        self.pool_off = np.zeros(MAX_OPCODES + 1, np.int64)
        self.opflags = np.zeros(MAX_OPCODES, np.int8)

    def run(self, buf: np.ndarray, pos: int, st: np.ndarray) -> int:
        return S.scan(buf, pos, buf.shape[0], st, self.o_warp, self.o_block, self.o_pc, self.o_opc, self.o_mask,
                      self.o_dst, self.o_src, self.o_memf, self.o_imm, self.o_line, self.o_nad, self.o_addr,
                      self.wrec, self.brec, self.hkeys, self.hvals, self.pool, self.pool_off, self.opflags)


def _raise_scan_error(st: np.ndarray, buf: np.ndarray, info: KernelInfo, where: str) -> None:
    code = int(st[S.S_ERR])
    pos = int(st[S.S_ERR_POS])
    end = pos
    while end < buf.shape[0] and buf[end] != 10:
        end += 1
    text = bytes(buf[pos:end]).decode("utf-8", errors="replace").strip()
    if len(text) > 100:
        text = text[:97] + "..."
    arg, arg2 = int(st[S.S_ERR_ARG]), int(st[S.S_ERR_ARG2])
    line = int(st[S.S_ERR_LINE])
    if code == S.E_COUNT:
        if arg < 0:
            msg = f"insts = {arg2} here, but more instruction lines follow (next: {text!r})"
        else:
            msg = f"insts = {arg2} here, but {arg} instruction lines follow"
    elif code == S.E_TB_NEST:
        msg = _NEST[arg].format(text=text)
    else:
        msg = _MESSAGES[code].format(text=text, arg=arg, wpb=info.warps_per_block, grid=info.grid)
    cls = TraceUnsupportedError if code in (S.E_TMA_MODE, S.E_TMA_OP) else TraceFormatError
    raise cls(msg, where, line)


@dataclass
class _Collected:
    wrecs: list
    brecs: list
    widths: list
    opcodes: list


MAX_BODY_LINE = 1 << 26     # a trace line holds at most a few kB (32 addresses, v6 register values)


class LineTooLong(ValueError):
    """A body line without a newline in :data:`MAX_BODY_LINE` bytes (raised by :func:`_read_blocks`)."""


def _read_blocks(stream, first: bytes, chunk: int):
    """Yield ``uint8`` arrays of whole lines (each ends with ``\\n``) read from ``stream`` into one
    reused buffer; a yielded array is valid until the next one is requested."""
    buf = bytearray(max(chunk, 2 * len(first), 1 << 12))
    held = len(first)
    buf[:held] = first
    while True:
        mv = memoryview(buf)
        n = stream.readinto(mv[held:])
        mv.release()
        if not n:
            if held:
                if buf[held - 1] != 10:
                    if held == len(buf):
                        buf = buf + b"\n"
                    else:
                        buf[held] = 10
                    held += 1
                yield np.frombuffer(buf, np.uint8, count=held)
            return
        total = held + n
        cut = buf.rfind(b"\n", 0, total) + 1
        if cut == 0:                      # one line longer than the buffer: grow (a new object,
            if len(buf) >= MAX_BODY_LINE:     # earlier yielded arrays may still point at the old one)
                raise LineTooLong(len(buf))
            buf = buf + bytearray(len(buf))
            held = total
            continue
        yield np.frombuffer(buf, np.uint8, count=cut)
        buf[: total - cut] = buf[cut:total]
        held = total - cut


def convert_traceg(path: str | os.PathLike, tw: TraceWriter,
                   progress: Callable[[int], None] | None = None, chunk: int = CHUNK_BYTES,
                   scan: _Scan | None = None) -> dict:
    """Stream one ``.traceg[.xz]`` into the native trace writer ``tw``; return its meta entry."""
    p = Path(path)
    where = str(p)
    if not p.is_file():
        raise TraceFormatError("not a regular file (a device or pipe would never end)", where)
    raw, stream = _open_binary(p)
    try:
        try:
            info, nhead, first = read_header(stream, where)
            if not info.name:
                info.name = p.name.split(".")[0]
            sc = scan or _Scan()
            sc.reset_opcodes()
            kw = tw.kernel(with_line_num=info.lineinfo)
            st = np.zeros(S.NSTATE, np.int64)
            st[S.S_LINE] = nhead + 1
            st[S.S_VERSION] = info.tracer_version
            st[S.S_LINEINFO] = int(info.lineinfo)
            st[S.S_GX], st[S.S_GY], st[S.S_GZ] = info.grid
            st[S.S_WPB] = info.warps_per_block
            st[S.S_BROW] = -1
            st[S.S_WARP] = -1
            st[S.S_EXPECT] = -1
            col = _Collected([], [], [], [])
            last_pos = 0
            size = p.stat().st_size * (16 if is_xz(p) else 1)      # no bigger buffer than the text needs
            for buf in _read_blocks(stream, first, min(chunk, max(size + 1, 1 << 12))):
                pos = 0
                while pos < buf.shape[0]:
                    st[S.S_NROWS] = st[S.S_NADDR] = st[S.S_NWREC] = st[S.S_NBREC] = 0
                    pos = sc.run(buf, pos, st)
                    if st[S.S_ERR]:
                        _raise_scan_error(st, buf, info, where)
                    _flush(sc, st, kw, col, info, where)
                if progress is not None:
                    now = raw.tell()
                    progress(now - last_pos)
                    last_pos = now
        except (lzma.LZMAError, EOFError) as exc:
            raise TraceFormatError(f"truncated or corrupted xz stream ({exc})", where) from None
        except LineTooLong:
            raise TraceFormatError(f"line longer than {MAX_BODY_LINE:,} bytes", where, int(st[S.S_LINE])) from None
        _check_end(st, where)
        entry = _finish(kw, st, col, info)
        return entry
    finally:
        stream.close()
        raw.close()


def _flush(sc: _Scan, st: np.ndarray, kw: KernelWriter, col: _Collected, info: KernelInfo, where: str = "") -> None:
    """Move one scanner call's outputs into the kernel writer (a memory row whose opcode names a
    width beyond :data:`teg.trace.checks.MAX_MEM_WIDTH` bytes per lane is a TraceFormatError)."""
    nops = int(st[S.S_NOPS])
    for oid in range(len(col.opcodes), nops):
        text = bytes(sc.pool[sc.pool_off[oid]:sc.pool_off[oid + 1]]).decode("ascii", errors="replace")
        col.opcodes.append(text)
        col.widths.append(opcode_width(text))
    n, na = int(st[S.S_NROWS]), int(st[S.S_NADDR])
    if n:
        width = np.asarray(col.widths, np.int64)
        opc = sc.o_opc[:n]
        mem_width = np.where(sc.o_memf[:n] != 0, width[opc], 0)
        if n and int(mem_width.max()) > MAX_MEM_WIDTH:
            bad = col.opcodes[int(opc[int(np.argmax(mem_width))])]
            raise TraceFormatError(f"memory opcode {bad[:60]!r} names {int(mem_width.max())} bytes per lane "
                                   f"(at most {MAX_MEM_WIDTH})", where)
        rows = {"warp": sc.o_warp[:n], "block": sc.o_block[:n], "pc": sc.o_pc[:n], "opcode": opc,
                "mask": sc.o_mask[:n], "dst": sc.o_dst[:n], "src": sc.o_src[:n],
                "mem_width": mem_width.astype(np.int16),
                "imm": sc.o_imm[:n]}
        if info.lineinfo:
            rows["line_num"] = sc.o_line[:n]
        kw.append_rows(rows, sc.o_nad[:n], sc.o_addr[:na].view(np.uint64))
    if st[S.S_NWREC]:
        col.wrecs.append(sc.wrec[: st[S.S_NWREC]].copy())
    if st[S.S_NBREC]:
        col.brecs.append(sc.brec[: st[S.S_NBREC]].copy())


def _check_end(st: np.ndarray, where: str) -> None:
    """End-of-file checks: an open warp must have all its lines, an open block its ``#END_TB``."""
    line = int(st[S.S_LINE]) - 1
    if st[S.S_WARP] >= 0 and st[S.S_EXPECT] >= 0 and st[S.S_SEEN] != st[S.S_EXPECT]:
        raise TraceFormatError(f"truncated: insts = {int(st[S.S_EXPECT])} at line {int(st[S.S_INSTS_LINE])}, "
                               f"but the file ends after {int(st[S.S_SEEN])} instruction lines", where, line)
    if st[S.S_IN_TB]:
        raise TraceFormatError("truncated: the file ends inside a thread block (no #END_TB)", where, line)


def _finish(kw: KernelWriter, st: np.ndarray, col: _Collected, info: KernelInfo) -> dict:
    """Per-warp and per-block arrays from the collected records; close the kernel."""
    wpb = info.warps_per_block
    brec = np.concatenate(col.brecs) if col.brecs else np.zeros((0, S.BREC), np.int64)
    wrec = np.concatenate(col.wrecs) if col.wrecs else np.zeros((0, S.WREC), np.int64)
    nblocks = brec.shape[0]
    counts = np.zeros(nblocks * wpb, np.int64)
    counts[wrec[:, 0]] = wrec[:, 1]
    warp_start = np.zeros(nblocks * wpb + 1, np.int64)
    np.cumsum(counts, out=warp_start[1:])
    warp_block = np.repeat(brec[:, 4], wpb).astype(np.int32)
    extras = {}
    if st[S.S_HAS_CLUSTER]:
        extras = {"cluster_id": brec[:, 5:8].astype(np.int32), "cluster_cta": brec[:, 8:11].astype(np.int32),
                  "cluster_rank": brec[:, 11].astype(np.int32)}
    return kw.finish(info, col.opcodes, warp_start, warp_block, brec[:, 1:4].astype(np.int32), extras)


# ---- whole inputs -------------------------------------------------------------------------------

def accelsim_files(path: str | os.PathLike) -> tuple[list[Path], list[tuple[int, int]], Path]:
    """Resolve an Accel-Sim input (``kernelslist.g``, its folder, or one ``.traceg[.xz]``) to
    (kernel files, memcpy list, the path named); every file must be a regular file (a pipe or a
    device is refused before anything reads it)."""
    p = Path(path)
    if p.is_dir():
        kl = p / "kernelslist.g"
        if not kl.exists():
            raise TraceFormatError("folder has no kernelslist.g (and is not a teg trace)", str(p))
        p = kl
    if not p.exists():
        raise TraceFormatError("no such file", str(p))
    _regular(p)
    if str(p).endswith(TRACE_SUFFIXES):
        return [p], [], p
    if str(p).endswith(".tracez"):
        raise TraceUnsupportedError(".tracez (Accel-Sim 2.0 binary) traces are not supported; convert with traceDsm", str(p))
    files, memcpy = read_kernelslist(p)
    return files, memcpy, p


def _regular(p: Path) -> None:
    from teg.fileio import stream_kind

    kind = stream_kind(p)
    if kind is not None or p.is_dir():
        raise TraceFormatError(f"is a {kind or 'folder'}, not a trace file (teg reads regular files only)", str(p))


def convert_accelsim(src: str | os.PathLike, out: str | os.PathLike, progress: bool = False,
                     force: bool = False, publish: bool = False) -> Path:
    """Convert an Accel-Sim trace (list, folder or one kernel file) to the native format at ``out``
    (``force``: replace a file there that teg did not write; ``publish``: a trace-cache entry,
    :class:`~teg.trace.native.TraceWriter`)."""
    files, memcpy, p = accelsim_files(src)
    bar = _progress_bar(sum(f.stat().st_size for f in files)) if progress else None
    try:
        with TraceWriter(out, source=os.fsdecode(p), memcpy=memcpy, force=force, publish=publish) as tw:
            sc = _Scan()
            for f in files:
                tw.add(convert_traceg(f, tw, bar.update if bar is not None else None, scan=sc))
            return tw.commit()
    finally:
        if bar is not None:
            bar.close()


def _progress_bar(total: int):
    """A tqdm bar over input bytes on stderr when tqdm is installed (optional extra ``progress``)
    and stderr is a terminal (``disable=None``: nothing is written into a redirected stderr), else None."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="B", unit_scale=True, desc="teg trace", leave=False, disable=None, file=sys.stderr)


# ---- writer -------------------------------------------------------------------------------------

_FORMAT_LINE = {3: "#traces format = threadblock_x threadblock_y threadblock_z warpid_tb PC mask dest_num [reg_dests] "
                   "opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses]",
                4: "#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width "
                   "[adrrescompress?] [mem_addresses]",
                5: "#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width "
                   "[adrrescompress?] [mem_addresses] immediate"}


def _header_text(info: KernelInfo) -> str:
    v = info.tracer_version
    lines = [f"-kernel name = {info.name}", f"-kernel id = {info.kernel_id}",
             "-grid dim = ({},{},{})".format(*info.grid), "-block dim = ({},{},{})".format(*info.block),
             f"-shmem = {info.shmem}", f"-nregs = {info.nregs}", f"-binary version = {info.binary_version}",
             f"-cuda stream id = {info.stream}", f"-shmem base_addr = 0x{info.shmem_base:016x}",
             f"-local mem base_addr = 0x{info.local_base:016x}", f"-nvbit version = {info.nvbit_version}",
             f"-accelsim tracer version = {v}"]
    if v >= 4 or info.lineinfo:
        lines.append(f"-enable lineinfo = {int(info.lineinfo)}")
    fmt = _FORMAT_LINE[min(max(v, 3), 5)]
    return "\n".join(lines) + "\n\n" + fmt + "\n\n"


def write_kernel_text(kt: KernelTrace, fh, buf_bytes: int = 8 << 20) -> None:
    """Write one kernel as ``.traceg`` text to the binary file ``fh``: header, then per block the
    ``#BEGIN_TB`` structure lines (Python) and the instruction lines (numba, :mod:`teg.trace.textwriter`),
    with the registers the NVBit tracer prints (:mod:`teg.trace.nvbit_view`; the kernel's view
    extras when it has them)."""
    info = kt.info
    if info.tracer_version <= 0:        # a trace teg built itself: newest text format the simulator reads
        info = replace(info, tracer_version=5)
    v = info.tracer_version
    fh.write(_header_text(info).encode())
    enc = [o.encode("ascii") for o in kt.opcodes]
    op_pool = np.frombuffer(b"".join(enc), np.uint8) if enc else np.zeros(0, np.uint8)
    op_off = np.zeros(len(enc) + 1, np.int64)
    np.cumsum([len(e) for e in enc], out=op_off[1:])
    op_gmma = np.array([v >= 6 and "GMMA" in o for o in kt.opcodes] + [False], np.bool_)
    lineinfo = kt.line_num is not None and info.lineinfo
    cols = (np.asarray(kt.pc), np.asarray(kt.mask), np.asarray(kt.opcode), np.asarray(kt.dst), np.asarray(kt.src),
            np.asarray(kt.mem_width), np.asarray(kt.imm), np.asarray(kt.addr_start),
            np.asarray(kt.addresses).view(np.int64),
            np.asarray(kt.line_num) if lineinfo else np.zeros(0, np.int32))
    view_pc = np.asarray(kt.extras.get(nvbit_view.EXTRA_PC, np.zeros(0, np.int64)), np.int64)
    view_regs = np.asarray(kt.extras.get(nvbit_view.EXTRA_REGS, np.zeros((0, 1 + nvbit_view.MAX_SRC), np.int16)),
                           np.int16)
    if view_regs.ndim != 2 or view_regs.shape != (view_pc.shape[0], 1 + nvbit_view.MAX_SRC):
        view_pc, view_regs = view_pc[:0], np.zeros((0, 1 + nvbit_view.MAX_SRC), np.int16)   # not a view: ignore
    buf = np.empty(buf_bytes, np.uint8)
    err = np.zeros(2, np.int64)
    wpb = info.warps_per_block
    cl = kt.extras if "cluster_id" in kt.extras else None
    for b in range(kt.block_xyz.shape[0]):
        xyz = np.asarray(kt.block_xyz[b], np.int64)
        head = ["\n#BEGIN_TB\n\nthread block = {},{},{}\n".format(*xyz.tolist())]
        if cl is not None:
            head.append("cluster id = {},{},{}\n".format(*np.asarray(cl["cluster_id"][b]).tolist()))
            head.append("cluster cta = {},{},{}\n".format(*np.asarray(cl["cluster_cta"][b]).tolist()))
            head.append(f"cluster rank = {int(cl['cluster_rank'][b])}\n")
        fh.write("".join(head).encode())
        for j in range(wpb):
            s, e = int(kt.warp_start[b * wpb + j]), int(kt.warp_start[b * wpb + j + 1])
            fh.write(f"\nwarp = {j}\ninsts = {e - s}\n".encode())
            r = s
            while r < e:
                n, r = format_rows(buf, r, e, v, lineinfo, xyz, j, *cols, op_pool, op_off, op_gmma, view_pc,
                                   view_regs, err)
                if err[0]:
                    raise TraceFormatError(f"row {int(err[1])}: its address count differs from its active lanes",
                                           f"kernel {info.name}")
                fh.write(buf[:n].data)
        fh.write(b"\n#END_TB\n")


ACCELSIM_KIND = "accelsim-trace"     # teg.fileio marker kind of an Accel-Sim folder teg wrote


def write_accelsim(trace: Trace, out_dir: str | os.PathLike, force: bool = False) -> Path:
    """Write ``trace`` as Accel-Sim text: ``kernelslist.g`` plus one ``kernel-<id>.traceg`` per kernel,
    into a temporary folder renamed to ``out_dir`` when complete (:func:`teg.fileio.atomic_folder`:
    an existing ``out_dir`` is replaced only if empty or written by teg; ``force``: also a file)."""
    with fileio.atomic_folder(out_dir, replaceable, kind=ACCELSIM_KIND, force=force) as tmp:
        names = []
        used = set()
        for n, kt in enumerate(trace.kernels):
            kid = kt.info.kernel_id if kt.info.kernel_id > 0 and kt.info.kernel_id not in used else n + 1
            while kid in used:
                kid += 1
            used.add(kid)
            name = f"kernel-{kid}.traceg"
            with open(tmp / name, "wb") as fh:
                write_kernel_text(kt, fh)
            names.append(name)
        lines = [f"MemcpyHtoD,0x{a:016x},{nb}" for a, nb in trace.memcpy] + names
        (tmp / "kernelslist.g").write_text("\n".join(lines) + "\n")
    return Path(out_dir)
