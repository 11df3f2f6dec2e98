"""The emulator's LEA with a negated operand (issue 37, point 16): nvcc computes ``p - off`` for a
64-bit ``off`` as ``LEA lo, P, -off_lo, p_lo, s`` then ``IADD3.X`` / ``IMAD.X hi, …, ~off_hi, P``:
the low word's carry-out must include the +1 of the two's complement, which is the whole carry
when ``off_lo << s`` is 0 (an offset of 0). Without it every such access lands exactly 2³² bytes
low and faults. Real nvcc 13 cubins (tests/fixtures/emu/pointer_walk.cu, sm_75 and sm_90; their
SASS holds the pattern), checked against numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from teg.emu import emulate, load_kernel

FIX = Path(__file__).parent / "fixtures" / "emu"
ARCHS = ["sm_75", "sm_90"]
N = 96


def kernel(arch: str, name: str):
    prog, image = load_kernel(FIX / f"pointer_walk.{arch}.cubin", name)
    negated = [ins for ins in prog.instructions if ins.base == "LEA" and any(o.text.startswith("-") for o in ins.operands)]
    assert negated, f"{name} on {arch}: no LEA with a negated operand (the pattern under test)"
    return prog, image


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name, dtype", [("walk_back_f32", np.float32), ("walk_back_f64", np.float64)])
def test_pointer_minus_a_signed_offset(arch, name, dtype):
    data = np.arange(N, dtype=dtype) * 1.5 + 1
    off = -np.random.default_rng(7).integers(0, N, N).astype(np.int64)     # base - off stays in the buffer
    off[::5] = 0                                                           # p - 0: the carry case
    off[1] = -(N - 1)
    prog, image = kernel(arch, name)
    res = emulate(prog, image, 2, 64, [("base", data), ("off", off), ("out", np.zeros(N, dtype)), f"n={N}"])
    np.testing.assert_array_equal(res.outputs["out"], data[-off])


@pytest.mark.parametrize("arch", ARCHS)
def test_walking_one_pointer_by_signed_steps(arch):
    data = (np.arange(N, dtype=np.float32) - 7) * 0.25
    steps = 5
    k = np.arange(N, dtype=np.int64)
    off = -(k % 4) + (k % 7 == 0)            # back (-1..-3), zero, and forward (+1) steps
    pos = np.array([-sum(int(off[(i + s) % N]) for s in range(steps)) for i in range(N)])
    assert pos.min() >= 0 and pos.max() < N
    prog, image = kernel(arch, "walk_steps")
    res = emulate(prog, image, 2, 64, [("end", data), ("off", off), ("out", np.zeros(N, np.float32)), f"n={N}",
                                        f"steps={steps}"])
    np.testing.assert_array_equal(res.outputs["out"], data[pos])
