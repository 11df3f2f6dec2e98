"""The bundled example (traces/): its emulator-recorded trace agrees with the trace derived by hand
from the CUDA source (traces/make_example_trace.py --walk), and the engine sees its bank conflict."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import teg.trace as tt
from teg.resources import traces_dir


@pytest.fixture(scope="module")
def walked():
    spec = importlib.util.spec_from_file_location("make_example_trace", traces_dir() / "make_example_trace.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.walked_trace().kernels[0]


def test_bundled_trace_matches_the_source_derived_trace(walked):
    emu = tt.load(traces_dir() / "matmul_abt.sm_90.trace.npz").kernels[0]
    for col in ("warp", "block", "pc", "mask", "dst", "src", "addr_start", "warp_start"):
        assert np.array_equal(np.asarray(getattr(emu, col)), np.asarray(getattr(walked, col))), col
    assert [emu.opcodes[i] for i in emu.opcode] == [walked.opcodes[i] for i in walked.opcode]
    # global buffers sit at different device addresses: compare offsets from each PC's lowest address
    for pc in np.unique(emu.pc[emu.mem_width > 0]):
        rows = np.nonzero(emu.pc == pc)[0]
        ea = np.concatenate([emu.row_addresses(r) for r in rows]).astype(np.int64)
        wa = np.concatenate([walked.row_addresses(r) for r in rows]).astype(np.int64)
        if ea.size:
            assert np.array_equal(ea - ea.min(), wa - wa.min()), hex(int(pc))
