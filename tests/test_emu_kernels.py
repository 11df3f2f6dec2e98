"""The emulator runs the suite of tests/fixtures/emu/kernels.cu (nvcc 13, sm_75 … sm_120 cubins and
SASS checked in) and every output buffer equals its numpy reference (exact for integers, a
tolerance for floats)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from teg.emu import emulate, load_kernel

FIX = Path(__file__).parent / "fixtures" / "emu"
ARCHS = ["sm_75", "sm_80", "sm_89", "sm_90", "sm_100", "sm_120"]


def run(arch, kernel, grid, block, args, shmem=0):
    prog, image = load_kernel(FIX / f"kernels.{arch}.cubin", kernel)
    return emulate(prog, image, grid, block, args, shmem)


def rng(seed=1):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("arch", ARCHS)
def test_saxpy(arch):
    n = 1000
    x = rng().random(n, dtype=np.float32)
    y = rng(2).random(n, dtype=np.float32)
    r = run(arch, "saxpy", 4, 256, [f"n={n}", "a=float32:2.5", ("x", x), ("y", y)])
    np.testing.assert_allclose(r.outputs["y"], np.float32(2.5) * x + y, rtol=1e-6)
    np.testing.assert_array_equal(r.outputs["x"], x)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_reduce_sum(arch, dtype):
    n = 1000
    kernel = "reduce_sum<float>" if dtype == np.float32 else "reduce_sum<int>"
    data = (rng().random(n) * 100).astype(dtype)
    r = run(arch, kernel, 4, 256, [("in", data), ("out", np.zeros(1, dtype)), f"n={n}"])
    if dtype == np.int32:
        assert r.outputs["out"][0] == data.sum()
    else:
        np.testing.assert_allclose(r.outputs["out"][0], data.astype(np.float64).sum(), rtol=1e-5)


@pytest.mark.parametrize("arch", ARCHS)
def test_histogram_shared_atomics(arch):
    n = 3000
    data = rng().integers(0, 5000, n).astype(np.uint32)
    extrema = np.array([0, 2**31 - 1, 0], np.int32)
    r = run(arch, "histogram", 4, 256, [("data", data), ("hist", np.zeros(256, np.uint32)), ("extrema", extrema), f"n={n}"])
    np.testing.assert_array_equal(r.outputs["hist"], np.bincount(data & 255, minlength=256))
    np.testing.assert_array_equal(r.outputs["extrema"], [data.max(), data.min(), 1])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kernel", ["matmul_ab", "matmul_abt", "matmul_abt_padded"])
def test_matmul(arch, kernel):
    n = 32
    a = rng().random((n, n), dtype=np.float32)
    b = rng(2).random((n, n), dtype=np.float32)
    r = run(arch, kernel, (n // 16, n // 16), (16, 16), [("A", a), ("B", b), ("C", np.zeros((n, n), np.float32)), f"n={n}"])
    ref = a.astype(np.float64) @ (b.T if "abt" in kernel else b).astype(np.float64)
    np.testing.assert_allclose(r.outputs["C"], ref, rtol=1e-5)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kernel", ["transpose_naive", "transpose_shared"])
def test_transpose(arch, kernel):
    n = 48
    a = np.arange(n * n, dtype=np.float32).reshape(n, n)
    r = run(arch, kernel, (n // 16, n // 16), (16, 16), [("in", a), ("out", np.zeros((n, n), np.float32)), f"n={n}"])
    np.testing.assert_array_equal(r.outputs["out"], a.T)


@pytest.mark.parametrize("arch", ARCHS)
def test_double_stencil(arch):
    n = 300
    x = rng().random(n) * 10 - 5
    x[7] = 0.0
    x[9] = 1e-310      # denormal: the sqrt slow path
    out = np.full(n, -1.0)
    r = run(arch, "dstencil", 3, 128, [("in", x), ("out", out), f"n={n}", "c0=0.25", "c1=float64:0.5"])
    ref = out.copy()
    ref[1:-1] = 0.25 * x[1:-1] + 0.5 * (x[:-2] + x[2:]) + np.sqrt(np.abs(x[1:-1]))
    np.testing.assert_allclose(r.outputs["out"], ref, rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("arch", ARCHS)
def test_half2_axpy(arch):
    n = 200
    x = (rng().random(2 * n) * 4 - 2).astype(np.float16)
    y = (rng(2).random(2 * n) * 4 - 2).astype(np.float16)
    a = np.array([1.5, -0.75], np.float16)
    r = run(arch, "half2_axpy", 1, 256, [("x", x), ("y", y), "a=uint32:" + str(a.view(np.uint32)[0]), f"n={n}"])
    ref = (np.tile(a, n).astype(np.float64) * x.astype(np.float64) + y.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(r.outputs["y"], ref)


def _divergent_ref(count, nthreads):
    out = np.zeros(nthreads)
    for i in range(nthreads):
        acc = 0.0
        if i & 1:
            for k in range(count[i]):
                acc += np.sin(acc + k)
        else:
            for _ in range(0, count[i], 2):
                acc = acc * 1.5 + np.exp(-acc)
        out[i] = acc
    return out


@pytest.mark.parametrize("arch", ARCHS)
def test_divergent_loop(arch):
    count = rng().integers(0, 12, 128).astype(np.int32)
    r = run(arch, "divergent_loop", 2, 64, [("count", count), ("out", np.zeros(128, np.float32))])
    np.testing.assert_allclose(r.outputs["out"], _divergent_ref(count, 128), rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("arch", ARCHS)
def test_count_loop(arch):
    count = rng().integers(0, 9, 64).astype(np.int32)
    init = np.full(64, 5, np.int32)
    r = run(arch, "count_loop", 2, 32, [("count", count), ("out", init)])
    np.testing.assert_array_equal(r.outputs["out"], 5 + count * (count - 1) // 2)


@pytest.mark.parametrize("arch", ARCHS)
def test_local_spill(arch):
    idx = rng().integers(0, 1000, 128).astype(np.int32)
    r = run(arch, "local_spill", 2, 64, [("idx", idx), ("out", np.zeros(128, np.float32)), "n=128"])
    t = np.arange(128) % 64
    j = idx & 63
    ref = (j * 0.5 + t) + (((j * 7) & 63) * 0.5 + t)
    np.testing.assert_array_equal(r.outputs["out"], ref.astype(np.float32))


@pytest.mark.parametrize("arch", ARCHS)
def test_cp_async_copy(arch):
    x = rng().random(512, dtype=np.float32)
    r = run(arch, "cp_async_copy", 2, 256, [("in", x), ("out", np.zeros(512, np.float32))])
    np.testing.assert_array_equal(r.outputs["out"], (x.reshape(2, 256)[:, ::-1] * 2).reshape(-1))


@pytest.mark.parametrize("arch", ARCHS)
def test_int_div_sqrt(arch):
    n = 256
    g = rng()
    a = g.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    b = g.integers(-70000, 70000, n).astype(np.int32)
    b[b == 0] = 3
    a[:4] = [7, -7, 2**31 - 1, -2**31]
    b[:4] = [2, 2, -1, 3]
    f = (g.random(n) * 100).astype(np.float32)
    f[5] = 0.0
    f[6] = 1e-40          # denormal: division / sqrt slow paths
    f[7] = 3e38
    r = run(arch, "int_div_sqrt", 2, 128, [("a", a), ("b", b), ("f", f), ("q", np.zeros(n, np.int32)),
                                            ("u", np.zeros(n, np.uint32))])
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    q = np.sign(a64) * np.sign(b64) * (np.abs(a64) // np.abs(b64))
    q = q.astype(np.int64).astype(np.int32)   # INT_MIN / -1 never occurs: b[2] = -1 with a = INT_MAX
    np.testing.assert_array_equal(r.outputs["q"], q)
    ua, ub = a.view(np.uint32).astype(np.uint64), b.view(np.uint32).astype(np.uint64)
    u = (ua % ub + np.fmod(a64, 7).astype(np.int64)).astype(np.uint64) & 0xFFFFFFFF
    np.testing.assert_array_equal(r.outputs["u"], u.astype(np.uint32))
    f64 = f.astype(np.float64)
    ref = (np.sqrt(f64) / (f64 + 1.0) + b64.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(r.outputs["f"], ref, rtol=1e-6)


@pytest.mark.parametrize("arch", ARCHS)
def test_int64_mix(arch):
    n = 64
    g = rng()
    a = g.integers(-2**40, 2**40, n, dtype=np.int64)
    b = g.integers(-2**33, 2**33, n, dtype=np.int64)
    r = run(arch, "int64_mix", 1, 64, [("a", a), ("b", b), ("c", np.zeros(n, np.int64)), ("d", np.zeros(n))])
    with np.errstate(over="ignore"):
        c = a * b + (a >> 3) - (b << 2) + np.maximum(a, b)
    np.testing.assert_array_equal(r.outputs["c"], c)
    np.testing.assert_allclose(r.outputs["d"], a * 0.5 + (b & 0xFFFFFFFF).astype(np.float64), rtol=1e-15)


def _shfl_ref(x):
    out, ballots = [], []
    for wv in x.reshape(-1, 32):
        v = wv.astype(np.float32).copy()
        for o in (16, 8, 4, 2, 1):
            src = np.where(np.arange(32) + o < 32, np.arange(32) + o, np.arange(32))
            v = (v + v[src]).astype(np.float32)
        out.append(np.float32(v[0] + np.float32(v[3] + v[1])))
        ballots.append(int(sum(1 << i for i in range(32) if wv[i] > 0.5)))
    return np.array(out, np.float32), np.array(ballots, np.uint32)


@pytest.mark.parametrize("arch", ARCHS)
def test_shuffles_votes(arch):
    x = rng().random(256, dtype=np.float32)
    r = run(arch, "shuffles_votes", 2, 128, [("in", x), ("out", np.zeros(8, np.float32)), ("ballots", np.zeros(8, np.uint32))])
    out, ballots = _shfl_ref(x)
    np.testing.assert_allclose(r.outputs["out"], out, rtol=1e-6)
    np.testing.assert_array_equal(r.outputs["ballots"], ballots)


@pytest.mark.parametrize("arch", ARCHS)
def test_wmma_gemm(arch):
    """One 16×16×16 tensor-core tile: C = A·B + C with A row-major, B column-major (fp16 in, fp32
    accumulate)."""
    g = rng()
    a = (g.random((16, 16)) - 0.5).astype(np.float16)
    b_cm = (g.random((16, 16)) - 0.5).astype(np.float16)     # column-major storage of B
    c = g.random((16, 16)).astype(np.float32)
    r = run(arch, "wmma_gemm", 1, 32, [("a", a), ("b", b_cm), ("c", c.copy())])
    ref = a.astype(np.float64) @ b_cm.T.astype(np.float64) + c
    np.testing.assert_allclose(r.outputs["c"], ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("arch", ARCHS)
def test_atomic_variants(arch):
    n = 256
    x = rng().integers(0, 1000, n).astype(np.int32)
    u32 = np.zeros(12, np.uint32)
    u32[1] = u32[3] = 0xFFFFFFFF
    s32 = np.array([2**31 - 1, -2**31, 0], np.int32)
    r = run(arch, "atomics_mix", 2, 128, [("v", x), ("u32", u32), ("s32", s32), ("u64", np.zeros(3, np.uint64)),
                                           ("s64", np.zeros(1, np.int64)), ("f32", np.zeros(5, np.float32)),
                                           ("f64", np.zeros(1))])
    inc = dec = 0
    for _ in range(n):
        inc = 0 if inc >= 1000 else inc + 1
        dec = 1000 if dec == 0 or dec > 1000 else dec - 1
    bits = np.uint32(1) << (x & 31).astype(np.uint32)
    xs = x.astype(np.uint64)
    counts = np.bincount(x & 3, minlength=4)
    np.testing.assert_array_equal(r.outputs["u32"], [x.sum(), x.min(), x.max(), np.bitwise_and.reduce(~bits),
                                                     np.bitwise_or.reduce(bits), np.bitwise_xor.reduce(x), inc, dec,
                                                     *counts])
    np.testing.assert_array_equal(r.outputs["s32"], [x.min() - 500, x.max() - 500, 7])
    np.testing.assert_array_equal(r.outputs["u64"], [(xs << np.uint64(20)).sum(), xs.max() << np.uint64(33), 0x100000001])
    np.testing.assert_array_equal(r.outputs["s64"], [(x.min().astype(np.int64) - 500) << 33])
    np.testing.assert_array_equal(r.outputs["f32"], [n * 0.5, *counts.astype(np.float32)])
    np.testing.assert_array_equal(r.outputs["f64"], [n * 0.25])


@pytest.mark.parametrize("arch", ARCHS)
def test_add_minmax(arch):
    """__viaddmax / __viaddmin, signed and unsigned: VIADDMNMX on sm_90 (PT = min, !PT = max of
    a + b mod 2^32 and c), IADD3 + IMNMX before it; the sum wraps before the comparison."""
    n = 64
    g = rng()
    a = g.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    b = g.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    c = g.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    a[:4] = [2**31 - 1, 5, -3, 0]
    b[:4] = [1, -7, -4, 0]
    c[:4] = [0, 0, 1, -1]
    r = run(arch, "add_minmax", 1, n, [("a", a), ("b", b), ("c", c), ("out", np.zeros(4 * n, np.int32))])
    s = ((a.astype(np.int64) + b) & 0xFFFFFFFF).astype(np.uint32)
    si, ci = s.view(np.int32), c
    cu = c.view(np.uint32)
    ref = np.stack([np.maximum(si, ci), np.minimum(si, ci),
                    np.maximum(s, cu).view(np.int32), np.minimum(s, cu).view(np.int32)], axis=1).ravel()
    np.testing.assert_array_equal(r.outputs["out"], ref)
    # by hand: INT_MAX + 1 = INT_MIN (0x80000000 unsigned) against 0; 5 - 7 = -2 (0xFFFFFFFE) against 0
    assert r.outputs["out"][:8].tolist() == [0, -2**31, -2**31, 0, 0, -2, -2, 0]


@pytest.mark.parametrize("arch", ARCHS)
def test_launch_geometry(arch):
    """blockDim and gridDim as the kernel reads them from constant bank 0 (c[0x0][0x0..0x14] up to
    sm_90, c[0x0][0x360..0x378] from sm_100 on: the cubin's target in its ELF header decides)."""
    from teg.emu.cubin import read_cubin
    assert read_cubin(FIX / f"kernels.{arch}.cubin")["geometry"].sm == int(arch[3:])
    r = run(arch, "geometry", (3, 2, 5), (4, 2, 3), [("o", np.zeros(6, np.uint32))])
    assert r.outputs["o"].tolist() == [4, 2, 3, 3, 2, 5]
