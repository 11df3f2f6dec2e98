"""The compact encoding of a native trace's kernels (format version 2; docs/formats.md, "Native
trace format"): one ``columns.frames`` file per kernel, a sequence of independently compressed
*frames*, so a writer streams rows out and a reader streams them back in with memory bounded by
one frame.

Frame layout (little-endian)::

    b"TGF2"  u8 table  3 x u8 0  u32 arrays  u64 items  u64 raw bytes  u64 payload bytes
    payload: zlib(arrays x (8-byte dtype descr, space padded; u32 values per item; u32 flags;
                            u64 items)  then  arrays x values, byte-shuffled when flag 1 is set)

The tables, in this order in the file: :data:`ROWS` frames (at most :data:`FRAME_ROWS` rows each:
the per-row columns in :data:`teg.trace.native.ROW_COLUMNS` order, then the eight address arrays
below), :data:`WARPS` frames (each warp's end row ``warp_start[1:]`` and ``warp_block``) and
:data:`BLOCKS` frames (``block_xyz``). One compressed stream per frame keeps a short kernel's
overhead to a few dozen bytes.

A static column (``opcode``, ``dst``, ``src``, ``mem_width``, ``imm``, ``line_num``) whose rows
are a function of the pc within the frame is stored as one item per distinct pc (flag
:data:`KEYED`; the reader expands it by the frame's ``pc`` column). Any other per-row column of one
value per row (format version 3; :func:`pack_column`) is stored as runs of equal values when it
has few (flag :data:`RUNS`: each item the value, then the run's length — ``warp`` and ``block``,
grouped by warp, and the ``mask`` of code that does not diverge), else in the narrowest unsigned
type that holds its values when that is narrower than its own (flag :data:`NARROW`: ``pc``,
almost always 16 bits). zlib's time is about proportional to the bytes it is handed: these
cut them to a third on the emulator's rows (a frame of a matmul: 27 → 9 bytes per row).

The byte shuffle stores byte 0 of every value, then byte 1, …: the high bytes of small integers are
runs of zeros and sign bytes, which zlib then takes at almost no cost (the idea of HDF5's and
Blosc's shuffle filter).

The addresses (the ragged ``addresses`` column with its ``addr_start`` offsets) are eight arrays:

* ``count`` — addresses of each row (u8, u16, u32 or u64: the narrowest that holds the frame's
  largest);
* ``kind`` — one per row with addresses: :data:`STRIDE` (address ``k`` of the row is
  ``base + k * stride``, one address a stride of 0), :data:`DELTAS` (each address after the first is
  the previous one plus a signed 32-bit delta of the row's *pattern*) or :data:`LANES` (the
  addresses stored whole);
* ``base`` (u64, one per row with addresses), ``stride`` (i64, one per STRIDE row);
* ``pattern`` (i32, one per DELTAS row: the id of its deltas), ``pattern_start`` (i64, one per
  distinct pattern of the frame: where its ``count - 1`` deltas start in ``deltas``), ``deltas``
  (i32, each distinct pattern once, not shuffled) — the lanes of a warp access repeat a few shapes
  (two half-warps of a 16-wide tile, a strided column …), so each shape is stored once per frame;
* ``lanes`` (u64, ``count`` per LANES row).

Address arithmetic is modulo 2^64 (numpy's wrapping int64), so every address round-trips exactly.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from teg.jit import njit

FRAME_MAGIC = b"TGF2"
FRAME_ROWS = 1 << 16           # rows per frame: a frame's decoded columns stay ~20 MB
ZLIB_LEVEL = 1                 # level 1: ~2.5x faster than the default, frames 1.5-2x larger (still << 16 B/row)
MAX_FRAME_BYTES = 1 << 30      # decoded bytes of one frame (a damaged header claiming more is refused)
ROWS, WARPS, BLOCKS = 0, 1, 2  # the tables of a kernel's frames
STRIDE, DELTAS, LANES = 0, 1, 2
ADDRESS_ARRAYS = ("count", "kind", "base", "stride", "pattern", "pattern_start", "deltas", "lanes")
ADDRESS_SHUFFLE = (True, True, True, True, True, True, False, True)
SHUFFLED = 1                   # array flag: bytes grouped by position within each value
KEYED = 2                      # array flag: one item per distinct pc of the frame (ascending), not per row
RUNS = 4                       # array flag (version 3): runs of equal rows, each item the value then the run's length
NARROW = 8                     # array flag (version 3): values in a narrower unsigned type than the column's
FLAGS = SHUFFLED | KEYED | RUNS | NARROW

_HEAD = struct.Struct("<4sB3xIQQQ")
_ARRAY = struct.Struct("<8sIIQ")
MAX_ARRAYS = 32


class FrameError(ValueError):
    """A frame that cannot be decoded (the message names the problem; the caller names the file)."""


# ---- frames ----------------------------------------------------------------------------------------

@njit(cache=True)
def _transpose_bytes(src, rows, cols, out):
    """``out`` = the ``rows x cols`` byte matrix ``src`` transposed (both flat uint8), one output
    row (a byte position) at a time, its bytes written in order; unsigned indexes spare numba's
    negative-index wraparound (0.23-0.25 ns a byte against 0.4-0.9 for the row-major loop)."""
    for j in range(cols):
        o = np.uint64(j * rows)
        for i in range(rows):
            out[o + np.uint64(i)] = src[np.uint64(i * cols + j)]


@njit(cache=True)
def _interleave_bytes(src, size, n, out):
    """The inverse of :func:`_transpose_bytes` ``(…, n, size, …)``: ``out`` (``n`` values of
    ``size`` bytes) from ``src``'s ``size`` planes of ``n`` bytes, one plane at a time, read in order."""
    for j in range(size):
        o = np.uint64(j * n)
        for i in range(n):
            out[np.uint64(i * size + j)] = src[o + np.uint64(i)]


def _shuffle(a: np.ndarray) -> np.ndarray:
    """The bytes of ``a`` (contiguous) grouped by byte position within each value."""
    size = a.dtype.itemsize
    raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    if size == 1:
        return raw
    out = np.empty_like(raw)
    _transpose_bytes(raw, raw.shape[0] // size, size, out)
    return out


def _unshuffle(raw: np.ndarray, dtype: np.dtype, n_values: int) -> np.ndarray:
    size = dtype.itemsize
    if size > 1:
        out = np.empty_like(raw)
        _interleave_bytes(raw, size, n_values, out)
        raw = out
    return raw.view(dtype)


def encode_frame(table: int, items: int, arrays: list[np.ndarray], shuffle: tuple[bool, ...] | None = None,
                 keyed: tuple[bool, ...] | None = None, flags: tuple[int, ...] | None = None) -> bytes:
    """One frame of ``table`` with ``items`` rows (warps, blocks) holding ``arrays`` (each 1-D, or
    2-D: items x values per item), each byte-shuffled unless ``shuffle`` says otherwise, those
    that ``keyed`` marks flagged :data:`KEYED` (:func:`keyed_tables`), each with its ``flags``
    (:data:`RUNS`, :data:`NARROW`: :func:`pack_column`) besides."""
    heads, bodies = [], []
    for i, a in enumerate(arrays):
        a = np.ascontiguousarray(a)
        dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
        a = a.astype(dt, copy=False)
        descr = np.lib.format.dtype_to_descr(dt).encode("ascii")
        inner = int(np.prod(a.shape[1:], dtype=np.int64)) if a.ndim > 1 else 1
        shuf = (shuffle is None or shuffle[i]) and dt.itemsize > 1
        f = (SHUFFLED if shuf else 0) | (KEYED if keyed is not None and keyed[i] else 0) | (flags[i] if flags else 0)
        heads.append(_ARRAY.pack(descr.ljust(8), inner, f, a.shape[0]))
        bodies.append(_shuffle(a) if shuf else a.reshape(-1).view(np.uint8))
    raw = b"".join([*heads, *(memoryview(b) for b in bodies)])
    body = zlib.compress(raw, ZLIB_LEVEL)
    return _HEAD.pack(FRAME_MAGIC, table, len(arrays), items, len(raw), len(body)) + body


def key_index(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a row of each distinct value of ``key``, ascending; each row's index into them). Keys within
    a few times the row count of each other (a kernel's pcs) are ranked through a table, others sorted."""
    lo, hi = int(key.min()), int(key.max())
    if hi - lo < 4 * key.shape[0] + 4096:
        off = key - lo
        seen = np.zeros(hi - lo + 1, np.int64)
        seen[off] = 1
        rank = np.cumsum(seen) - 1
        inv = rank[off]
        first = np.empty(int(rank[-1]) + 1, np.int64)
        first[inv] = np.arange(key.shape[0])          # any row of each key: the tables are checked whole
        return first, inv
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    return first, inv.reshape(-1)


def distinct_keys(key: np.ndarray) -> np.ndarray:
    """The distinct values of ``key``, ascending (:func:`key_index`'s keys without the row index)."""
    lo, hi = int(key.min()), int(key.max())
    if hi - lo < 4 * key.shape[0] + 4096:
        seen = np.zeros(hi - lo + 1, np.bool_)
        seen[key - lo] = True
        return np.flatnonzero(seen) + lo
    return np.unique(key)


def keyed_tables(key: np.ndarray, arrays: list[np.ndarray]) -> list[np.ndarray | None]:
    """For each of ``arrays`` (one item per entry of ``key``): its table of one item per distinct
    key (ascending) when every entry equals its key's item — the static columns of a trace are a
    function of the pc — else None."""
    if key.shape[0] == 0:
        return [None] * len(arrays)
    first, inv = key_index(key)
    out = []
    for a in arrays:
        flat = np.ascontiguousarray(a).reshape(a.shape[0], -1)
        out.append(a[first] if _is_keyed(flat, first, inv) else None)
    return out


@njit(cache=True)
def _is_keyed(a, first, inv):
    """Whether every row of ``a`` (rows x values) equals the row ``first[inv[i]]`` of its key (one
    pass, no gathered copies)."""
    for i in range(a.shape[0]):
        f = first[inv[i]]
        for c in range(a.shape[1]):
            if a[i, c] != a[f, c]:
                return False
    return True


def expand_keyed(index: tuple[np.ndarray, np.ndarray], table: np.ndarray) -> np.ndarray:
    """The column of a :data:`KEYED` ``table`` (one item per distinct key, ascending), given the
    frame's :func:`key_index`."""
    first, inv = index
    if table.shape[0] != first.shape[0]:
        raise FrameError(f"damaged frame (a keyed table of {table.shape[0]} items for {first.shape[0]} keys)")
    return table[inv]


def read_frame(fh) -> tuple[int, int, list[np.ndarray], list[int]] | None:
    """The next frame of the binary stream ``fh`` as (table, items, arrays as 2-D items x values,
    their flags), or None at the end of the stream; a damaged frame is a :class:`FrameError`."""
    head = fh.read(_HEAD.size)
    if not head:
        return None
    if len(head) != _HEAD.size:
        raise FrameError("truncated frame header")
    magic, table, count, items, raw_bytes, zbytes = _HEAD.unpack(head)
    if magic != FRAME_MAGIC:
        raise FrameError("damaged frame (no frame marker where one should start)")
    if count > MAX_ARRAYS or table > BLOCKS or raw_bytes > MAX_FRAME_BYTES or raw_bytes < count * _ARRAY.size:
        raise FrameError(f"damaged frame header ({count} arrays, {raw_bytes:,} bytes)")
    body = fh.read(zbytes)
    if len(body) != zbytes:
        raise FrameError("truncated frame (the file ends inside it)")
    try:
        d = zlib.decompressobj()
        raw = d.decompress(body, raw_bytes) if raw_bytes else d.decompress(body, 1)
        ok = len(raw) == raw_bytes and d.eof and not d.unconsumed_tail and not d.unused_data
    except zlib.error as exc:
        raise FrameError(f"damaged frame data (zlib: {exc})") from None
    if not ok:
        raise FrameError(f"damaged frame data (not the {raw_bytes:,} bytes its header promises)")
    buf = np.frombuffer(raw, np.uint8)
    at = count * _ARRAY.size
    out, all_flags = [], []
    for i in range(count):
        descr, inner, flags, n = _ARRAY.unpack_from(raw, i * _ARRAY.size)
        try:
            dt = np.dtype(descr.decode("ascii").strip())
        except (TypeError, ValueError, UnicodeDecodeError):
            raise FrameError(f"damaged frame header (dtype {descr!r})") from None
        size = n * inner * dt.itemsize
        if dt.kind not in "iu" or inner < 1 or flags & ~FLAGS or at + size > raw_bytes \
                or (flags & RUNS and flags & (KEYED | NARROW)):
            raise FrameError(f"damaged frame header ({dt}, {n} x {inner} values)")
        part = buf[at:at + size]
        a = _unshuffle(part, dt, n * inner) if flags & SHUFFLED else part.view(dt)
        if a.ctypes.data % dt.itemsize:
            a = a.copy()                                    # aligned for the jitted decoders
        out.append(a.reshape(n, inner))
        all_flags.append(flags)
        at += size
    if at != raw_bytes:
        raise FrameError("damaged frame (its arrays do not fill it)")
    return table, items, out, all_flags


# ---- per-row columns: runs and narrow types (version 3) ------------------------------------------

RUNS_AT_MOST = 4               # runs stored when a column has at most rows / RUNS_AT_MOST of them


def pack_column(a: np.ndarray) -> tuple[np.ndarray, int]:
    """(what a frame stores, its flag) for the per-row column ``a`` (rows x 1 value, an integer
    type): runs (:data:`RUNS`; a type of 4 or 8 bytes, whose values hold any run's length) when
    there are at most ``rows / RUNS_AT_MOST`` of them, else the values in the narrowest unsigned
    type holding them (:data:`NARROW`) when that is narrower, else ``a`` itself (flag 0)."""
    n = a.shape[0]
    if n == 0 or a.ndim != 2 or a.shape[1] != 1 or a.dtype.kind not in "iu":
        return a, 0
    v = np.ascontiguousarray(a).reshape(-1)
    runs, lo, hi = _column_stats(v)
    if a.dtype.itemsize >= 4 and runs * RUNS_AT_MOST <= n:
        out = np.empty((runs, 2), a.dtype)
        _runs(v, out)
        return out, RUNS
    if lo >= 0 and a.dtype != np.uint64:        # (the stats are int64: a uint64 beyond 2^63 reads negative)
        for dt in (np.uint8, np.uint16, np.uint32):
            if np.dtype(dt).itemsize >= a.dtype.itemsize:
                break
            if hi <= np.iinfo(dt).max:
                return a.astype(dt), NARROW
    return a, 0


@njit(cache=True)
def _column_stats(v):
    """(runs of equal values, smallest, largest) of the non-empty ``v``, in one pass."""
    runs = 1
    lo = hi = v[0]
    for i in range(1, v.shape[0]):
        x = v[i]
        runs += x != v[i - 1]
        lo = min(lo, x)
        hi = max(hi, x)
    return runs, int(lo), int(hi)


@njit(cache=True)
def _runs(v, out):
    """``out`` (runs x 2) = each run's value and length."""
    r = 0
    start = 0
    for i in range(1, v.shape[0] + 1):
        if i == v.shape[0] or v[i] != v[start]:
            out[r, 0] = v[start]
            out[r, 1] = i - start
            r += 1
            start = i


def unpack_column(a: np.ndarray, flags: int, dtype: np.dtype, width: int, n: int) -> np.ndarray:
    """The column of ``n`` rows x ``width`` values of ``dtype`` that :func:`pack_column` stored as
    ``a`` (items x values) with ``flags``; a :class:`FrameError` when it does not fit."""
    if flags & RUNS:
        if a.dtype != dtype or a.shape[1] != width + 1:
            raise FrameError(f"damaged frame (runs as {a.dtype} x {a.shape[1]} values)")
        length = a[:, -1].astype(np.int64)
        if a.shape[0] and (int(length.min()) < 1 or int(length.sum()) != n) or (not a.shape[0] and n):
            raise FrameError(f"damaged frame (runs that do not cover its {n} rows)")
        return np.repeat(a[:, :-1], length, axis=0)
    if flags & NARROW:
        if a.dtype.kind != "u" or a.dtype.itemsize >= dtype.itemsize or dtype.kind not in "iu":
            raise FrameError(f"damaged frame ({a.dtype} values for a column of {dtype})")
        return a.astype(dtype)
    return a


# ---- addresses -------------------------------------------------------------------------------------

def _count_dtype(m: int):
    for dt in (np.uint8, np.uint16, np.uint32):
        if m <= np.iinfo(dt).max:
            return dt
    return np.uint64


@njit(cache=True, inline="always")
def _same_deltas(store, at, d, n):
    """Whether the stored pattern at ``store[at:at + n - 1]`` equals the row's deltas ``d[:n - 1]``:
    a reduction without an early exit over unsigned indexes, which LLVM vectorises."""
    x = 0
    for q in range(n - 1):
        x |= np.int64(store[np.uint64(at + q)]) ^ d[np.uint64(q)]
    return x == 0


@njit(cache=True)
def _encode_addresses(na, start, a):
    """Kinds, bases, strides, pattern ids, pattern starts, deltas and lanes of the rows (``na``
    addresses each, row ``i``'s at ``a[start[i]:start[i] + na[i]]``, ``a`` as int64), one pass per row; a DELTAS row's deltas are looked up in a
    hash table of the frame's patterns (open addressing, FNV-1a over the deltas and their count)
    and stored once (the last two patterns found are tried first: rows of one warp alternate
    between a few shapes; a pattern's id is the same whichever way it is found). Arrays are
    allocated at their largest and trimmed.

    For speed (about half the time of a loop that stops at the first differing lane): each row's
    deltas are computed once into a small buffer, with the stride and the 32-bit range tested by
    reductions without an early exit, and the comparisons with a stored pattern are reductions
    too, so LLVM vectorises them; indexes are unsigned, which spares numba's negative-index
    wraparound in those loops."""
    nrows = na.shape[0]
    nmem = 0
    widest = 1
    m = 0
    for i in range(nrows):
        if na[i] > 0:
            nmem += 1
            widest = max(widest, na[i])
            m += na[i]
    kind = np.empty(nmem, np.uint8)
    base = np.empty(nmem, np.int64)
    stride = np.empty(nmem, np.int64)
    pattern = np.empty(nmem, np.int32)
    pstart = np.empty(nmem, np.int64)
    store = np.empty(m, np.int32)
    lanes = np.empty(m, np.int64)
    slots = 16
    while slots < 2 * nmem:
        slots *= 2
    table = np.full(slots, -1, np.int64)
    plen = np.empty(nmem, np.int64)
    d = np.empty(widest, np.int64)     # the row's deltas
    j = k = ns = npat = nd = nl = npr = 0
    last0 = last1 = -1
    for i in range(nrows):
        n = na[i]
        if n == 0:
            continue
        k = start[i]
        b = a[k]
        base[j] = b
        if n == 1:
            kind[j] = 0
            stride[ns] = 0
            ns += 1
            j += 1
            continue
        step = a[k + 1] - b
        off = 0
        lo = step
        hi = step
        for q in range(n - 1):          # no early exit: LLVM vectorises the reductions
            u = np.uint64(k + q)
            x = a[u + np.uint64(1)] - a[u]
            d[np.uint64(q)] = x
            off |= x ^ step
            lo = min(lo, x)
            hi = max(hi, x)
        if off == 0:
            kind[j] = 0
            stride[ns] = step
            ns += 1
        elif lo >= -2147483648 and hi <= 2147483647:
            kind[j] = 1
            p = -1
            if last0 >= 0 and plen[last0] == n and _same_deltas(store, pstart[last0], d, n):
                p = last0
            if p < 0 and last1 >= 0 and plen[last1] == n and _same_deltas(store, pstart[last1], d, n):
                p = last1
                last0, last1 = last1, last0
            if p < 0:
                h = np.uint64(14695981039346656037) ^ np.uint64(n)
                for q in range(n - 1):
                    h = (h ^ np.uint64(d[q] & 0xFFFFFFFF)) * np.uint64(1099511628211)
                slot = np.int64(h & np.uint64(slots - 1))
                while True:
                    p = table[slot]
                    if p < 0:
                        table[slot] = npat
                        pstart[npat] = nd
                        plen[npat] = n
                        for q in range(n - 1):
                            store[nd + q] = np.int32(d[q])
                        nd += n - 1
                        p = npat
                        npat += 1
                        break
                    if plen[p] == n and _same_deltas(store, pstart[p], d, n):
                        break
                    slot = (slot + 1) & (slots - 1)
                last1 = last0
                last0 = p
            pattern[npr] = p
            npr += 1
        else:
            kind[j] = 2
            for q in range(n):
                lanes[nl + q] = a[k + q]
            nl += n
        j += 1
    return kind, base, stride[:ns], pattern[:npr], pstart[:npat], store[:nd], lanes[:nl]


class Gathered:
    """The addresses of rows where they already lie: row ``i``'s ``count[i]`` addresses at
    ``buffer[offsets[i]:]`` (the emulator's recording buffer, its rows grouped by warp without
    copying the addresses: :func:`teg.emu.rows.expand_into`)."""

    def __init__(self, offsets: np.ndarray, buffer: np.ndarray):
        self.offsets, self.buffer = offsets, buffer

    def rows(self, a: int, e: int) -> "Gathered":
        return Gathered(self.offsets[a:e], self.buffer)

    def materialize(self, count: np.ndarray) -> np.ndarray:
        """The addresses in row order, one array (uint64)."""
        na = np.ascontiguousarray(count, np.int64)
        out = np.empty(int(na.sum()), np.uint64)
        _gather(na, np.ascontiguousarray(self.offsets, np.int64), self.buffer.view(np.int64), out.view(np.int64))
        return out


@njit(cache=True)
def _gather(na, off, a, out):
    k = 0
    for i in range(na.shape[0]):
        o = off[i]
        for q in range(na[i]):
            out[k] = a[o + q]
            k += 1


def encode_addresses(count: np.ndarray, addresses: np.ndarray | Gathered) -> list[np.ndarray]:
    """The address arrays (module docstring) of rows with ``count`` addresses each, their
    addresses ``addresses`` in row order (or where they lie, :class:`Gathered`)."""
    na = np.ascontiguousarray(count, np.int64)
    if isinstance(addresses, Gathered):
        a = np.ascontiguousarray(addresses.buffer, np.uint64).view(np.int64)
        off = np.ascontiguousarray(addresses.offsets, np.int64)
        if off.shape[0] != na.shape[0] or (na.shape[0] and (int(off.min()) < 0 or int((off + na).max()) > a.shape[0])):
            raise ValueError("gathered addresses outside their buffer")
    else:
        a = np.ascontiguousarray(addresses, np.uint64).view(np.int64)
        if int(na.sum()) != a.shape[0]:
            raise ValueError(f"{a.shape[0]} addresses for rows that count {int(na.sum())}")
        off = np.zeros(na.shape[0], np.int64)
        if na.shape[0] > 1:
            np.cumsum(na[:-1], out=off[1:])
    kind, base, stride, pattern, pstart, deltas, lanes = _encode_addresses(na, off, a)
    return [na.astype(_count_dtype(int(na.max()) if na.size else 0)), kind, base.view(np.uint64), stride, pattern,
            pstart, deltas, lanes.view(np.uint64)]


@njit(cache=True)
def _decode_addresses(na, kind, base, stride, pattern, pstart, deltas, lanes, out):
    """Fill ``out`` (int64) with the addresses of the rows; False when the arrays do not fit
    together (a kind or pattern out of range, too few strides, patterns or lanes, some left over)."""
    j = k = ns = npr = nl = 0
    for i in range(na.shape[0]):
        n = na[i]
        if n == 0:
            continue
        if j >= kind.shape[0] or k + n > out.shape[0]:
            return False
        c = kind[j]
        b = base[j]
        if c == 0:
            if ns >= stride.shape[0]:
                return False
            step = stride[ns]
            ns += 1
            for q in range(n):
                out[k + q] = b + step * q
        elif c == 1:
            if npr >= pattern.shape[0]:
                return False
            p = pattern[npr]
            npr += 1
            if p < 0 or p >= pstart.shape[0]:
                return False
            at = pstart[p]
            if at < 0 or at + n - 1 > deltas.shape[0]:
                return False
            out[k] = b
            for q in range(1, n):
                b += np.int64(deltas[at + q - 1])
                out[k + q] = b
        elif c == 2:
            if nl + n > lanes.shape[0]:
                return False
            for q in range(n):
                out[k + q] = lanes[nl]
                nl += 1
        else:
            return False
        j += 1
        k += n
    return j == kind.shape[0] and k == out.shape[0] and ns == stride.shape[0] and npr == pattern.shape[0] \
        and nl == lanes.shape[0]


_ADDRESS_TYPES = (None, np.uint8, np.uint64, np.int64, np.int32, np.int64, np.int32, np.uint64)


def decode_addresses(rows: int, arrays: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(count per row as int64, addresses as uint64) from a frame's address arrays; arrays that
    do not fit together are a :class:`FrameError`."""
    if len(arrays) != len(ADDRESS_ARRAYS) or any(x.shape[1] != 1 for x in arrays):
        raise FrameError("damaged address frame (wrong arrays)")
    flat = [x.reshape(-1) for x in arrays]
    if any(t is not None and x.dtype != t for x, t in zip(flat, _ADDRESS_TYPES)):
        raise FrameError("damaged address frame (arrays of the wrong types)")
    cnt, kind, base, stride, pattern, pstart, deltas, lanes = flat
    if cnt.shape[0] != rows or kind.shape[0] != base.shape[0]:
        raise FrameError(f"damaged address frame ({cnt.shape[0]} counts for {rows} rows)")
    na = cnt.astype(np.int64)
    if na.size and int(cnt.max()) > 1 << 20:
        raise FrameError("damaged address frame (address count out of range)")
    m = int(na.sum())
    if m * 8 > MAX_FRAME_BYTES:
        raise FrameError("damaged address frame (too many addresses)")
    out = np.empty(m, np.int64)
    if not _decode_addresses(na, kind, base.view(np.int64), stride, pattern, pstart, deltas, lanes.view(np.int64), out):
        raise FrameError("damaged address frame (kinds, strides, patterns and lanes do not match the counts)")
    return na, out.view(np.uint64)
