"""Native trace format: save/load (directory memory-mapped, .npz), Accel-Sim write-back round trips
on every real sample, clear errors for corrupted or foreign files, all-or-nothing writes."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

import teg.trace as tt
from teg.trace import TraceFormatError
from teg.trace.model import KernelTrace
from teg.trace.native import FORMAT_VERSION

DATA = Path(__file__).parent / "data" / "traces"
SAMPLES = [DATA / "microgpusim" / "vectoradd-100-32-trace", DATA / "microgpusim" / "matrixmul-32-32-trace",
           DATA / "dp-performance-accel-sim" / "simpletorch"]
ARRAYS = [f.name for f in fields(KernelTrace) if f.name not in ("info", "opcodes", "extras")]


def assert_same_trace(a, b):
    assert len(a) == len(b)
    assert a.memcpy == b.memcpy
    for ka, kb in zip(a, b):
        assert ka.info == kb.info
        assert ka.opcodes == kb.opcodes
        for name in ARRAYS:
            x, y = getattr(ka, name), getattr(kb, name)
            if x is None or y is None:
                assert x is None and y is None, name
                continue
            assert np.asarray(x).dtype == np.asarray(y).dtype, name
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)
        assert sorted(ka.extras) == sorted(kb.extras)
        for k in ka.extras:
            np.testing.assert_array_equal(ka.extras[k], kb.extras[k])


@pytest.mark.parametrize("folder", SAMPLES, ids=lambda p: p.name)
def test_accelsim_round_trip_on_real_samples(folder, tmp_path):
    first = tt.load(folder, cache=tmp_path / "c1")
    tt.write_accelsim(first, tmp_path / "back")
    again = tt.load(tmp_path / "back", cache=tmp_path / "c2")
    assert_same_trace(first, again)
    # and a second generation writes the same text
    tt.write_accelsim(again, tmp_path / "back2")
    for f in (tmp_path / "back").iterdir():
        assert f.read_text() == (tmp_path / "back2" / f.name).read_text()


@pytest.mark.parametrize("suffix", ["", ".npz"])
def test_save_and_load_native(tmp_path, suffix):
    trace = tt.load(SAMPLES[2], cache=tmp_path / "c")
    out = tt.save(trace, tmp_path / f"saved{suffix}")
    back = tt.load(out)
    assert_same_trace(trace, back)
    if not suffix:
        meta = json.loads((out / "meta.json").read_text())
        assert meta["format"] == "teg-trace" and meta["version"] == FORMAT_VERSION
        assert [k["rows"] for k in meta["kernels"]] == [74, 103, 146, 48, 86, 145]
        assert {k["codec"] for k in meta["kernels"]} == {"frames"}
        assert [p.name for p in (out / "k0000").iterdir()] == ["columns.frames"]
    raw = tt.save(trace, tmp_path / f"raw{suffix}", compact=False)     # every column a mapped .npy
    back = tt.load(raw)
    assert_same_trace(trace, back)
    assert isinstance(back.kernels[0].pc, np.memmap) and isinstance(back.kernels[0].addresses, np.memmap)


def test_converted_cache_is_reused(tmp_path):
    a = tt.load(SAMPLES[0], cache=tmp_path / "c")
    (entry,) = list((tmp_path / "c").iterdir())
    stamp = (entry / "meta.json").stat().st_mtime_ns
    b = tt.load(SAMPLES[0], cache=tmp_path / "c")
    assert (entry / "meta.json").stat().st_mtime_ns == stamp
    assert_same_trace(a, b)


def test_convert_both_directions(tmp_path):
    native = tt.convert(SAMPLES[1] / "kernelslist.g", tmp_path / "mm.npz")
    text = tt.convert(native, tmp_path / "mm-text")
    assert sorted(f.name for f in text.iterdir()) == [".teg-output", "kernel-1.traceg", "kernelslist.g"]
    assert (text / "kernelslist.g").read_text().startswith("MemcpyHtoD,0x")
    assert_same_trace(tt.load(native), tt.load(text, cache=tmp_path / "c"))
    repacked = tt.convert(tt.save(tt.load(native), tmp_path / "mm-dir"), tmp_path / "again.npz")
    assert_same_trace(tt.load(native), tt.load(repacked))


def test_save_replaces_existing_output(tmp_path):
    trace = tt.load(SAMPLES[0], cache=tmp_path / "c")
    tt.save(trace, tmp_path / "out")
    tt.save(tt.load(SAMPLES[1], cache=tmp_path / "c"), tmp_path / "out")
    assert tt.load(tmp_path / "out").kernels[0].num_rows == 4416
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "out"]


def test_failed_save_leaves_nothing(tmp_path):
    trace = tt.load(SAMPLES[0], cache=tmp_path / "c")
    kt = trace.kernels[0]
    kt.warp_start = np.asarray(kt.warp_start).copy()
    kt.warp_start[-1] += 1                                   # inconsistent with the rows
    with pytest.raises(ValueError):
        tt.save(trace, tmp_path / "bad")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


# ---- corrupted / foreign files ----------------------------------------------------------------------

@pytest.fixture()
def saved(tmp_path) -> Path:
    return tt.save(tt.load(SAMPLES[0], cache=tmp_path / "c"), tmp_path / "saved", compact=False)


def test_corrupted_meta(saved):
    (saved / "meta.json").write_text("{not json")
    with pytest.raises(TraceFormatError, match=r"saved/meta\.json: corrupted trace metadata"):
        tt.load(saved)


def test_foreign_meta_and_future_version(saved):
    meta = json.loads((saved / "meta.json").read_text())
    (saved / "meta.json").write_text(json.dumps({**meta, "format": "something-else"}))
    with pytest.raises(TraceFormatError, match=r"meta\.json: not a teg trace"):
        tt.load(saved)
    (saved / "meta.json").write_text(json.dumps({**meta, "version": FORMAT_VERSION + 1}))
    with pytest.raises(TraceFormatError, match=rf"format version {FORMAT_VERSION + 1} not supported"):
        tt.load(saved)


def test_truncated_column(saved):
    col = saved / "k0000" / "addresses.npy"
    col.write_bytes(col.read_bytes()[:200])
    with pytest.raises(TraceFormatError, match=r"k0000/addresses\.npy: corrupted column"):
        tt.load(saved)


def test_column_with_wrong_length(saved):
    np.save(saved / "k0000" / "mask.npy", np.zeros(3, np.uint32))
    with pytest.raises(TraceFormatError, match=r"saved/k0000: column mask has 3 rows, pc has 344"):
        tt.load(saved)


def test_foreign_npz_and_garbage_file(tmp_path):
    np.savez(tmp_path / "other.npz", a=np.arange(3))
    with pytest.raises(TraceFormatError, match=r"other\.npz: not a readable teg trace"):
        tt.load(tmp_path / "other.npz")
    (tmp_path / "junk.npz").write_bytes(b"\x00" * 100)
    with pytest.raises(TraceFormatError, match=r"junk\.npz"):
        tt.load(tmp_path / "junk.npz")


def test_never_overwrites_a_folder_that_is_not_a_trace(tmp_path):
    precious = tmp_path / "docs"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(tt.TraceOutputError, match=r"docs: is a folder that teg did not write; not replacing it"):
        tt.convert(SAMPLES[0], precious, force=True)
    with pytest.raises(tt.TraceOutputError, match=r"docs: is a folder that teg did not write; not replacing it"):
        tt.write_accelsim(tt.load(SAMPLES[0], cache=tmp_path / "c"), precious, force=True)
    assert [p.name for p in precious.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "docs"]


def test_trace_without_tracer_version_is_written_as_version_5(tmp_path):
    trace = tt.load(SAMPLES[0], cache=tmp_path / "c")
    trace.kernels[0].info.tracer_version = 0
    tt.write_accelsim(trace, tmp_path / "v5")
    text = (tmp_path / "v5" / "kernel-1.traceg").read_text()
    assert "-accelsim tracer version = 5\n" in text and "\n0098 ffffffff 1 R4 LDG.E.CG 1 R4 4 1 0x7f2b2d500000 4 0 \n" in text
    back = tt.load(tmp_path / "v5", cache=tmp_path / "c").kernels[0]
    np.testing.assert_array_equal(np.asarray(back.addresses), np.asarray(trace.kernels[0].addresses))
