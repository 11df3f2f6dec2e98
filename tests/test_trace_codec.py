"""The compact native trace encoding (teg/trace/codec.py, format version 3): each address encoding
on hand-built rows, runs and narrowed per-row columns, frames and whole traces round-tripping
exactly (hypothesis), frames cut at every batch boundary, the spill for long kernels, version-1 and
version-2 traces still read, and damaged frames refused with one line naming the member."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import teg.trace as tt
from teg.trace import TraceFormatError, codec
from teg.trace import native
from teg.trace.model import KernelInfo, KernelTrace, Trace

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "traces" / "matmul_abt.sm_90.trace.npz"
MM = ROOT / "tests" / "data" / "traces" / "microgpusim" / "matrixmul-32-32-trace"
U64 = np.uint64


def _roundtrip_addresses(count, addresses):
    arrays = codec.encode_addresses(np.asarray(count), np.asarray(addresses, U64))
    frame = codec.encode_frame(codec.ROWS, len(count), arrays, codec.ADDRESS_SHUFFLE)
    table, rows, back, _ = codec.read_frame(io.BytesIO(frame))
    na, got = codec.decode_addresses(rows, back)
    return arrays, na, got


def test_each_address_encoding_on_hand_built_rows():
    count = [4, 0, 3, 3, 1, 2, 3, 3]
    addresses = [100, 104, 108, 112,            # base 100, stride 4
                 1000, 1004, 900,               # deltas +4, -104 (not one stride): pattern 0
                 0, 1 << 40, 5,                 # deltas beyond 32 bits: whole lanes
                 7,                             # one address: stride 0
                 2**64 - 4, 0,                  # wraps past 2^64: still a stride of 4
                 5000, 5004, 4900,              # pattern 0 again: stored once
                 8, 16, 8]                      # deltas +8, -8: pattern 1
    arrays, na, got = _roundtrip_addresses(count, addresses)
    cnt, kind, base, stride, pattern, pattern_start, deltas, lanes = arrays
    assert cnt.dtype == np.uint8 and cnt.tolist() == count
    S, D, L = codec.STRIDE, codec.DELTAS, codec.LANES
    assert kind.tolist() == [S, D, L, S, S, D, D]
    assert base.tolist() == [100, 1000, 0, 7, 2**64 - 4, 5000, 8]
    assert stride.tolist() == [4, 0, 4]
    assert pattern.tolist() == [0, 0, 1] and pattern_start.tolist() == [0, 2] and deltas.tolist() == [4, -104, 8, -8]
    assert lanes.tolist() == [0, 1 << 40, 5]
    assert na.tolist() == count and got.dtype == U64 and got.tolist() == addresses


def test_deltas_fall_back_to_lanes_at_the_int32_edge():
    # +2^31 - 1 fits a 32-bit delta, +2^31 does not
    _, kind, *_ = codec.encode_addresses(np.array([3, 3]), np.array([0, 5, 5 + 2**31 - 1, 0, 5, 5 + 2**31], U64))
    assert kind.tolist() == [codec.DELTAS, codec.LANES]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**64 - 1) | st.integers(2**40, 2**40 + 512), max_size=33), max_size=40),
       st.sampled_from(["as drawn", "strided", "few patterns"]))
def test_addresses_round_trip(rows, shape):
    if shape == "strided":                        # rows with a common stride are the common case
        rows = [[(r[0] + 8 * k) % 2**64 for k in range(len(r))] if r else r for r in rows]
    elif shape == "few patterns":                 # a handful of lane shapes, repeated (and hash-probed)
        shapes = [[0, 4, 8, 200, 204], [0, -4, 100, 96, 2**31 - 1], [0, 4, 8, 200, 208]]
        rows = [[(r[0] + shapes[i % 3][k % 5] + 1000 * (k // 5)) % 2**64 for k in range(len(r))] if r else r
                for i, r in enumerate(rows)]
    flat = [a for r in rows for a in r]
    _, na, got = _roundtrip_addresses([len(r) for r in rows], np.array(flat, U64))
    assert na.tolist() == [len(r) for r in rows] and got.tolist() == flat


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["<i2", "<i4", "<u4", "<i8", "<u8", "|u1"]), st.integers(0, 300), st.integers(1, 4),
       st.integers(0, 2**32))
def test_frames_round_trip(dtype, n, inner, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(np.dtype(dtype))
    a = rng.integers(info.min, info.max, size=(n, inner), dtype=np.dtype(dtype), endpoint=True)
    buf = io.BytesIO(codec.encode_frame(codec.ROWS, n, [a, a[:, 0], a[:, 0]], (True, False, True))
                     + codec.encode_frame(codec.BLOCKS, 0, [a[:0]]))
    table, rows, (x, y, z), flags = codec.read_frame(buf)
    assert (table, rows) == (codec.ROWS, n) and x.dtype == a.dtype and np.array_equal(x, a)
    shuffled = np.dtype(dtype).itemsize > 1
    assert flags == [codec.SHUFFLED * shuffled, 0, codec.SHUFFLED * shuffled]
    assert np.array_equal(y[:, 0], a[:, 0]) and np.array_equal(z[:, 0], a[:, 0])
    assert codec.read_frame(buf)[:2] == (codec.BLOCKS, 0) and codec.read_frame(buf) is None


def test_static_columns_are_stored_per_pc_only_when_they_follow_it():
    pc = np.array([32, 16, 32, 48, 16], np.int64)
    follows = np.array([[3, 1], [2, 2], [3, 1], [4, 4], [2, 2]], np.int16)
    differs = np.array([7, 7, 8, 7, 7], np.int64)          # pc 32 with two immediates
    t_follow, t_differ = codec.keyed_tables(pc, [follows, differs])
    assert t_follow.tolist() == [[2, 2], [3, 1], [4, 4]] and t_differ is None
    assert np.array_equal(codec.expand_keyed(codec.key_index(pc), t_follow), follows)
    with pytest.raises(codec.FrameError, match="keyed table of 2 items for 3 keys"):
        codec.expand_keyed(codec.key_index(pc), t_follow[:2])
    assert codec.distinct_keys(pc).tolist() == [16, 32, 48]
    far = np.array([2**40, 0, 2**40, 5], np.int64)        # keys far apart: ranked by sorting
    assert codec.distinct_keys(far).tolist() == [0, 5, 2**40]
    (t,) = codec.keyed_tables(far, [np.array([1, 2, 1, 3])])
    assert t.tolist() == [2, 3, 1] and codec.expand_keyed(codec.key_index(far), t).tolist() == [1, 2, 1, 3]


def _assert_same(a: KernelTrace, b: KernelTrace):
    for name in native.COLUMNS:
        x, y = getattr(a, name), getattr(b, name)
        if x is None:
            assert y is None, name
            continue
        assert np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(np.asarray(x), np.asarray(y)), name
    assert sorted(a.extras) == sorted(b.extras)


def _random_kernel(rng, rows: int, lanes_kind: str) -> KernelTrace:
    """A kernel of ``rows`` rows in 3 warps, half of them memory rows of every address pattern."""
    mask = rng.choice(np.array([0xFFFFFFFF, 0xFFFF, 0x1, 0x0F0F0F0F], np.uint32), rows)
    mem = rng.random(rows) < 0.5
    counts = np.where(mem, [bin(int(m)).count("1") for m in mask], 0).astype(np.int64)
    parts = []
    for c in counts:
        b = np.uint64(rng.integers(0, 2**63)) * U64(2)          # anywhere in 64 bits; sums wrap
        pick = lanes_kind if lanes_kind != "mixed" else rng.choice(["stride", "deltas", "lanes"])
        if pick == "stride":
            parts.append(b + U64(4) * np.arange(c, dtype=U64))
        elif pick == "deltas":
            parts.append(b + np.cumsum(rng.integers(-300, 300, c)).astype(U64))
        else:
            parts.append(rng.integers(0, 2**63, c).astype(U64) * U64(2))
    addresses = (np.concatenate(parts) if parts else np.zeros(0)).astype(U64)
    addr_start = np.zeros(rows + 1, np.int64)
    np.cumsum(counts, out=addr_start[1:])
    ws = np.array([0, rows // 3, 2 * rows // 3, rows], np.int64)
    warp = np.repeat(np.arange(3, dtype=np.int32), np.diff(ws))
    return KernelTrace(
        info=KernelInfo(name="k", grid=(3, 1, 1), block=(32, 1, 1), binary_version=90), opcodes=["LDS", "FFMA"],
        warp=warp, block=warp.copy(), pc=(16 * rng.integers(0, 50, rows)).astype(np.int64),
        opcode=(~mem).astype(np.int32), mask=mask, dst=rng.integers(-1, 200, (rows, 4)).astype(np.int16),
        src=rng.integers(-1, 200, (rows, 8)).astype(np.int16), mem_width=np.where(mem, 4, 0).astype(np.int16),
        imm=rng.integers(-2**40, 2**40, rows), addr_start=addr_start, addresses=addresses, warp_start=ws,
        warp_block=np.arange(3, dtype=np.int32), block_xyz=np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]], np.int32),
        line_num=rng.integers(0, 999, rows).astype(np.int32))


@pytest.mark.parametrize("lanes_kind", ["stride", "deltas", "lanes", "mixed"])
def test_writer_cuts_frames_at_any_batch_boundary(tmp_path, monkeypatch, lanes_kind):
    """Rows come in batches of any length; frames hold exactly FRAME_ROWS rows (the last fewer), and
    the loaded columns equal the written ones, in memory and spilled to files."""
    monkeypatch.setattr(codec, "FRAME_ROWS", 7)
    monkeypatch.setenv("TEG_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(len(lanes_kind))
    kt = _random_kernel(rng, 61, lanes_kind)
    with native.TraceWriter(tmp_path / "t.npz") as tw:
        kw = tw.kernel(with_line_num=True)
        cuts = [0, 3, 4, 11, 30, 31, 61]                  # batches of 3, 1, 7, 19, 1, 30 rows
        for a, b in zip(cuts, cuts[1:]):
            rows = {n: getattr(kt, n)[a:b] for n in native.ROW_COLUMNS}
            kw.append_rows(rows, np.diff(kt.addr_start[a:b + 1]), kt.addresses[kt.addr_start[a]:kt.addr_start[b]])
        tw.add(kw.finish(kt.info, kt.opcodes, kt.warp_start, kt.warp_block, kt.block_xyz))
        tw.commit()
    with zipfile.ZipFile(tmp_path / "t.npz") as zf:
        fh = io.BytesIO(zf.read("k0000/columns.frames"))
        sizes = []
        while (f := codec.read_frame(fh)) is not None:
            sizes.append(f[:2])
    assert sizes == [(codec.ROWS, 7)] * 8 + [(codec.ROWS, 5), (codec.WARPS, 3), (codec.BLOCKS, 3)]
    loaded = tt.load(tmp_path / "t.npz").kernels[0]
    _assert_same(kt, loaded)
    assert not isinstance(loaded.addresses, np.memmap) and not (tmp_path / "cache").exists()
    # read-only like a mapped column, so the jitted lowering sees one array type for both
    assert not any(getattr(loaded, n).flags.writeable for n in native.COLUMNS)
    monkeypatch.setattr(native, "DECODE_IN_MEMORY", 0)          # a long kernel: decoded into files, mapped
    spilled = tt.load(tmp_path / "t.npz").kernels[0]
    _assert_same(kt, spilled)
    assert isinstance(spilled.addresses, np.memmap) and isinstance(spilled.pc, np.memmap)
    files = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.npy")}
    assert {p.name for p in files} == {f"{n}.npy" for n in native.COLUMNS}
    _assert_same(kt, tt.load(tmp_path / "t.npz").kernels[0])                # the second load reuses them
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.npy")} == files


def test_version_1_traces_are_still_read_and_resaved_identically(tmp_path):
    with zipfile.ZipFile(BUNDLED) as zf:
        assert json.loads(zf.read("meta.json"))["version"] == 1
    old = tt.load(BUNDLED)
    out = tt.save(old, tmp_path / "v2.npz")
    with zipfile.ZipFile(out) as zf:
        meta = json.loads(zf.read("meta.json"))
    assert meta["version"] == native.FORMAT_VERSION == 3 and meta["kernels"][0]["codec"] == "frames"
    _assert_same(old.kernels[0], tt.load(out).kernels[0])
    assert out.stat().st_size * 10 < BUNDLED.stat().st_size


def test_version_2_traces_are_still_read():
    """A file teg wrote in format version 2 (frames without runs or narrowed columns; written at
    a01e072 from the bundled version-1 example) loads row for row equal to that example."""
    v2 = ROOT / "tests" / "fixtures" / "native" / "matmul_abt.sm_90.v2.npz"
    with zipfile.ZipFile(v2) as zf:
        assert json.loads(zf.read("meta.json"))["version"] == 2
    with open_frames(v2) as fh:
        flags = codec.read_frame(fh)[3]
    assert not any(f & (codec.RUNS | codec.NARROW) for f in flags)
    _assert_same(tt.load(BUNDLED).kernels[0], tt.load(v2).kernels[0])


def open_frames(npz: Path):
    zf = zipfile.ZipFile(npz)
    return zf.open(f"k0000/{native.FRAMES_FILE}")


def test_per_row_columns_as_runs_or_narrow_types():
    """Hand-computed: few runs → RUNS (value, length); many runs of small non-negative values →
    the narrowest unsigned type; negative values or no narrower type → stored as they are."""
    warp = np.array([5, 5, 5, 5, 5, 7, 7, 7, 7, 7, 7, 7], np.int32).reshape(-1, 1)
    a, f = codec.pack_column(warp)
    assert f == codec.RUNS and a.dtype == np.int32 and a.tolist() == [[5, 5], [7, 7]]
    pc = np.array([16, 32, 48, 64, 70000 * 16, 0], np.int64).reshape(-1, 1)
    a, f = codec.pack_column(pc)
    assert f == codec.NARROW and a.dtype == np.uint32 and a.reshape(-1).tolist() == pc.reshape(-1).tolist()
    a, f = codec.pack_column(pc % 4096)
    assert f == codec.NARROW and a.dtype == np.uint16
    mw = np.array([0, 4, 0, 8], np.int16).reshape(-1, 1)              # 2-byte runs would not hold a length
    assert codec.pack_column(mw)[1] == codec.NARROW and codec.pack_column(mw)[0].dtype == np.uint8
    for same in (np.array([-1, 3, -1, 3], np.int64).reshape(-1, 1),     # negative: as it is
                 np.array([1, 2, 3, 2**32], np.int64).reshape(-1, 1),   # none narrower holds 2^32 … (u32 max + 1)
                 np.array([0, 1, 0, 1], np.uint8).reshape(-1, 1),       # already one byte
                 np.array([1, 2**63 + 5, 1, 2], np.uint64).reshape(-1, 1),   # uint64: never narrowed
                 np.zeros((4, 8), np.int16), np.zeros((0, 1), np.int32)):
        a, f = codec.pack_column(same)
        assert f == 0 and a is same
    for a0 in (warp, pc, pc % 4096, mw):
        a, f = codec.pack_column(a0)
        back = codec.unpack_column(a, f, a0.dtype, 1, a0.shape[0])
        assert back.dtype == a0.dtype and np.array_equal(back, a0)


@pytest.mark.parametrize("stored, flags, problem", [
    (np.array([[5, 3], [7, 0]], np.int32), codec.RUNS, "runs that do not cover"),     # a run of length 0
    (np.array([[5, 3], [7, 5]], np.int32), codec.RUNS, "runs that do not cover"),     # 8 rows, not 7
    (np.array([[5, 3], [7, 4]], np.int64), codec.RUNS, "runs as int64"),               # not the column's type
    (np.array([[1], [2]], np.int8), codec.NARROW, "int8 values"),                      # signed
    (np.array([[1], [2]], np.uint32), codec.NARROW, "uint32 values"),                  # not narrower
])
def test_damaged_runs_and_narrow_columns_are_refused(stored, flags, problem):
    with pytest.raises(codec.FrameError, match=problem):
        codec.unpack_column(stored, flags, np.dtype(np.int32), 1, 7)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["<i2", "<i4", "<u4", "<i8"]), st.integers(0, 400), st.integers(1, 50), st.integers(0, 2**32))
def test_packed_columns_round_trip_through_frames(dtype, n, runs, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(np.dtype(dtype))
    hi = min(int(rng.choice([255, 65535, info.max])), info.max)
    vals = rng.integers(max(info.min, -5) if seed % 3 == 0 else 0, hi, size=runs, dtype=np.dtype(dtype), endpoint=True)
    a = np.repeat(vals, np.diff(np.sort(np.r_[0, rng.integers(0, n + 1, runs - 1), n]))).reshape(-1, 1) if n else \
        np.zeros((0, 1), dtype)
    stored, f = codec.pack_column(a)
    table, rows, (x,), flags = codec.read_frame(io.BytesIO(codec.encode_frame(codec.ROWS, n, [stored], flags=(f,))))
    assert flags[0] & (codec.RUNS | codec.NARROW) == f
    back = codec.unpack_column(x, f, np.dtype(dtype), 1, n)
    assert back.dtype == np.dtype(dtype) and np.array_equal(back, a)


def test_cache_entries_stay_mapped_columns(tmp_path):
    """A trace-cache entry (Accel-Sim converted once) keeps every column a .npy: mapped, not decoded."""
    kt = tt.load(MM, cache=tmp_path / "c").kernels[0]
    (entry,) = [p for p in (tmp_path / "c").iterdir() if p.name.startswith("t-")]
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["version"] == native.FORMAT_VERSION and "codec" not in meta["kernels"][0]
    assert isinstance(kt.addresses, np.memmap)


@pytest.fixture()
def compact(tmp_path) -> Path:
    return tt.save(tt.load(MM, cache=tmp_path / "c"), tmp_path / "saved")


@pytest.mark.parametrize("damage, fragment", [
    (lambda b: b[:len(b) // 2], "truncated frame"),
    (lambda b: b[:-3] + bytes([b[-3] ^ 0xFF]) + b[-2:], "damaged frame data"),      # the last zlib checksum
    (lambda b: b"XXXX" + b[4:], "no frame marker"),
    (lambda b: b + b, "frames out of order"),
    (lambda b: b[:4] + bytes([2]) + b[5:], "rows .* rows the metadata gives|blocks frame"),
])
def test_damaged_frames_are_one_line_errors(compact, damage, fragment):
    f = compact / "k0000" / "columns.frames"
    good = f.read_bytes()
    f.write_bytes(damage(good))
    with pytest.raises(TraceFormatError, match=rf"saved/k0000: corrupted column file k0000/columns\.frames \(.*"
                                               rf"({fragment})"):
        tt.load(compact)
    f.write_bytes(good)
    tt.load(compact)


def test_missing_frames_and_unknown_codec(compact):
    meta = json.loads((compact / "meta.json").read_text())
    meta["kernels"][0]["codec"] = "zstd"
    (compact / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(TraceFormatError, match=r"codec\" 'zstd' not supported"):
        tt.load(compact)
    meta["kernels"][0]["codec"] = "frames"
    meta["kernels"][0]["rows"] += 1
    (compact / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(TraceFormatError, match=r"columns\.frames \(.*rows, the metadata gives"):
        tt.load(compact)
    (compact / "k0000" / "columns.frames").unlink()
    with pytest.raises(TraceFormatError, match=r"corrupted column file k0000/columns\.frames"):
        tt.load(compact)


def test_trace_of_no_rows_round_trips(tmp_path):
    kt = _random_kernel(np.random.default_rng(1), 0, "stride")
    out = tt.save(Trace([kt], source="empty"), tmp_path / "e.npz")
    _assert_same(kt, tt.load(out).kernels[0])


def _frames_bytes(tmp_path, kt, name: str, promise: bool) -> bytes:
    kw = native.KernelWriter(tmp_path / name)
    if promise:
        kw.promise_static_by_pc()
    for a, b in ((0, 20), (20, 61)):
        rows = {n: getattr(kt, n)[a:b] for n in native.ROW_COLUMNS if n != "line_num"}
        kw.append_rows(rows, np.diff(kt.addr_start[a:b + 1]), kt.addresses[kt.addr_start[a]:kt.addr_start[b]])
    kw.finish(kt.info, kt.opcodes, kt.warp_start, kt.warp_block, kt.block_xyz)
    return (tmp_path / name / native.FRAMES_FILE).read_bytes()


def test_promised_static_columns_are_written_as_the_checked_ones(tmp_path, monkeypatch):
    """A writer told that the static columns follow the pc (the emulator's rows) skips the per-row
    check and writes the same frames as one that checks; the check stays for every other writer."""
    monkeypatch.setattr(codec, "FRAME_ROWS", 16)
    kt = _random_kernel(np.random.default_rng(5), 61, "mixed")
    ins = (kt.pc // 16).astype(np.int64)                  # static columns made functions of the pc
    kt.opcode = (ins % 2).astype(np.int32)
    kt.dst = np.stack([ins, -ins, ins + 1, ins * 2], axis=1).astype(np.int16)
    kt.src = np.repeat(ins[:, None], 8, axis=1).astype(np.int16)
    kt.mem_width = np.where(kt.opcode == 0, 4, 0).astype(np.int16)
    kt.imm = ins * 1000
    assert _frames_bytes(tmp_path, kt, "promised", True) == _frames_bytes(tmp_path, kt, "checked", False)


def test_emulator_streamer_promises_static_columns_only_for_distinct_addresses():
    from types import SimpleNamespace

    from teg.emu.launch import TraceStreamer

    class Writer:
        promised = None

        def promise_static_by_pc(self, pcs, tables):
            self.promised = (pcs, tables)
            return True

    info = KernelInfo(name="k", grid=(1, 1, 1), block=(32, 1, 1), binary_version=90)
    for addrs, promised in (([32, 0, 16], True), ([0, 16, 16], False)):
        w = Writer()
        static = (["A", "B"], np.array([0, 1, 0], np.int32), np.array([[1, -1, -1, -1]] * 3, np.int16),
                  np.array([[2] + [-1] * 7] * 3, np.int16))
        compiled = SimpleNamespace(ins_addr=np.array(addrs, np.int64), static=static,
                                   lowered=SimpleNamespace(mem_width=np.array([4, 0, 8]), imm=np.array([7, 8, 9])))
        sink = TraceStreamer(w)
        sink.start(info, compiled, 1)
        assert (w.promised is not None) is promised and sink.static_rows is not promised
        if promised:                      # the static columns per pc ascending: 0, 16, 32 are instructions 1, 2, 0
            pcs, tables = w.promised
            assert pcs.tolist() == [0, 16, 32] and tables["opcode"].tolist() == [1, 0, 0]
            assert tables["mem_width"].dtype == np.int16 and tables["mem_width"].tolist() == [0, 8, 4]
            assert tables["imm"].tolist() == [8, 9, 7]
            rows = sink.full_rows({"pc": np.array([16, 16, 32], np.int64)})
            assert rows["imm"].tolist() == [9, 9, 7] and rows["dst"].shape == (3, 4)


def test_rows_without_static_columns_write_the_same_frames(tmp_path, monkeypatch):
    """A writer given the static columns per pc takes rows without them, and writes the same bytes
    as one handed every row's static columns; a row at a pc the tables lack is refused."""
    monkeypatch.setattr(codec, "FRAME_ROWS", 16)
    kt = _random_kernel(np.random.default_rng(6), 61, "mixed")
    ins = (kt.pc // 16).astype(np.int64)
    kt.opcode = (ins % 2).astype(np.int32)
    kt.dst = np.stack([ins, -ins, ins + 1, ins * 2], axis=1).astype(np.int16)
    kt.src = np.repeat(ins[:, None], 8, axis=1).astype(np.int16)
    kt.mem_width = np.where(kt.opcode == 0, 4, 0).astype(np.int16)
    kt.imm = ins * 1000
    pcs = np.arange(0, 16 * 50, 16, dtype=np.int64)
    k = pcs // 16
    tables = {"opcode": k % 2, "dst": np.stack([k, -k, k + 1, k * 2], axis=1), "src": np.repeat(k[:, None], 8, axis=1),
              "mem_width": np.where(k % 2 == 0, 4, 0), "imm": k * 1000}
    kw = native.KernelWriter(tmp_path / "per_pc")
    assert kw.promise_static_by_pc(pcs, tables)
    for a, b in ((0, 20), (20, 61)):
        rows = {n: getattr(kt, n)[a:b] for n in ("warp", "block", "pc", "mask")}
        kw.append_rows(rows, np.diff(kt.addr_start[a:b + 1]), kt.addresses[kt.addr_start[a]:kt.addr_start[b]])
    kw.finish(kt.info, kt.opcodes, kt.warp_start, kt.warp_block, kt.block_xyz)
    assert (tmp_path / "per_pc" / native.FRAMES_FILE).read_bytes() == _frames_bytes(tmp_path, kt, "checked", False)
    assert not native.KernelWriter(tmp_path / "lines", with_line_num=True).promise_static_by_pc(pcs, tables)
    kw = native.KernelWriter(tmp_path / "short")
    kw.promise_static_by_pc(pcs[:10], {n: t[:10] for n, t in tables.items()})
    with pytest.raises(ValueError, match="pc the promised static columns do not hold"):
        kw.append_rows({n: getattr(kt, n)[:16] for n in ("warp", "block", "pc", "mask")},
                       np.diff(kt.addr_start[:17]), kt.addresses[:kt.addr_start[16]])


def test_addresses_read_where_they_lie_encode_and_write_as_copied_ones(tmp_path, monkeypatch):
    """Rows whose addresses stay in a recording buffer in another order (codec.Gathered: each row's
    offset there) encode to the same arrays, and write the same frames at any batch boundary, as
    the same addresses copied in row order."""
    monkeypatch.setattr(codec, "FRAME_ROWS", 16)
    kt = _random_kernel(np.random.default_rng(8), 61, "mixed")
    n_addr = np.diff(kt.addr_start)
    rng = np.random.default_rng(9)
    order = rng.permutation(61)                           # the buffer holds the rows' addresses shuffled
    buf_parts, offsets, at = [], np.zeros(61, np.int64), 7
    buf_parts.append(np.full(7, 12345, U64))              # and something before them
    for r in order:
        offsets[r] = at
        buf_parts.append(np.asarray(kt.addresses[kt.addr_start[r]:kt.addr_start[r + 1]]))
        at += int(n_addr[r])
    buf = np.concatenate(buf_parts)
    g = codec.Gathered(offsets, buf)
    assert np.array_equal(g.materialize(n_addr), kt.addresses)
    for x, y in zip(codec.encode_addresses(n_addr, g), codec.encode_addresses(n_addr, kt.addresses)):
        assert x.dtype == y.dtype and np.array_equal(x, y)
    with pytest.raises(ValueError, match="outside their buffer"):
        codec.encode_addresses(n_addr, codec.Gathered(offsets + len(buf), buf))
    kw = native.KernelWriter(tmp_path / "gathered")
    for a, b in ((0, 20), (20, 61)):
        rows = {n: getattr(kt, n)[a:b] for n in native.ROW_COLUMNS if n != "line_num"}
        kw.append_rows(rows, n_addr[a:b], g.rows(a, b))
    kw.finish(kt.info, kt.opcodes, kt.warp_start, kt.warp_block, kt.block_xyz)
    assert (tmp_path / "gathered" / native.FRAMES_FILE).read_bytes() == _frames_bytes(tmp_path, kt, "copied", False)
