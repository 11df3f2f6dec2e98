"""The validation suite: manifest, launch arithmetic, buffer contents, and the CUDA sources compiled
with the real nvcc for sm_80 and sm_90 (skipped without nvcc) — every chain kernel must keep its
dependent instructions between the two clock reads (TEG §3.2.1 method; ptxas may otherwise move
the chain or the reads, so the SASS is checked)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from teg import TegError
from teg.validate import suite as S

def _cuobjdump() -> str | None:
    """cuobjdump where teg finds it (PATH, CUDA_HOME, the pip wheel of the test extra)."""
    from teg.sass.binaries import ToolNotFoundError, find_tool

    try:
        return str(find_tool("cuobjdump"))
    except ToolNotFoundError:
        return None


@pytest.fixture(scope="module")
def suite():
    return S.load()


def test_manifest_covers_every_group_and_issue_item(suite):
    groups = Counter(c.group for c in suite.cases)
    assert set(groups) == set(S.GROUPS)
    names = {c.name for c in suite.cases}
    # Hong & Kim's seven micro-benchmarks, coalesced and uncoalesced
    assert {f"hk_mb{i}_{v}" for i in range(1, 8) for v in ("c", "uc")} <= names
    # 1- to 32-way bank conflicts and the odd (conflict-free) stride
    assert {f"bank_s{s}_n32" for s in (1, 2, 4, 8, 16, 32, 33)} <= names
    assert {"matmul_abt_conflict", "matmul_abt_padded", "hopping_aos", "hopping_soa",
            "transpose_naive", "transpose_shared", "reduce_block"} <= names
    assert {"lat_ldg_l1_n16", "lat_ldg_l2_n16", "lat_ldg_dram_n16", "lat_lds_n32"} <= names
    assert suite.warps == (1, 2, 4, 8, 16, 32, 64)


def test_every_case_resolves_at_every_warp_count(suite):
    for case in suite.cases:
        for w in suite.warps:
            launch = S.launch_for(case, w, 132)
            assert launch.blocks_per_sm * launch.threads_per_block == 32 * w
            assert launch.threads_per_block <= 32 * case.max_warps_per_block
            args = S.arguments(case, launch)
            assert args.timing_words == 4 * 132 * launch.blocks_per_sm
            assert args.out_words == 132 * 32 * w


def test_launch_for_splits_warps_into_blocks():
    case = S.load().case("transpose_naive")           # at most 8 warps per block
    assert S.launch_for(case, 4, 10) == S.Launch(warps=4, threads_per_block=128, blocks_per_sm=1, num_sms=10)
    big = S.launch_for(case, 64, 10)
    assert (big.threads_per_block, big.blocks_per_sm, big.grid) == (256, 8, 80)
    with pytest.raises(S.SuiteError, match="not a multiple"):
        S.launch_for(case, 12, 10)


def test_expressions():
    env = {"S": 132, "W": 4, "s": 33}
    assert S.evaluate("S*W", env) == 528
    assert S.evaluate("2**28 + 2**20*(16*S*W*s // 2**28 + 2)", env) == 2**28 + 2**20 * 2
    assert S.evaluate("s if s <= 32 else 1", env) == 1
    assert S.evaluate(7, env) == 7
    with pytest.raises(S.SuiteError, match="unknown name 'Q'"):
        S.evaluate("Q + 1", env, "case x")
    with pytest.raises(S.SuiteError, match="unsupported construct"):
        S.evaluate("__import__('os')", env)


def test_chase_buffer_holds_device_addresses(suite):
    case = suite.case("lat_ldg_l2_n16")
    launch = S.launch_for(case, 1, 3)
    args = S.arguments(case, launch)
    assert (args.p0, args.buffer_bytes) == (17 * 128, 3 * 17 * 128 + 128)
    base = 0x7F00_0000_0000
    words = S.buffer_contents(case, launch, args.buffer_bytes, base).view(np.uint64)
    # block 1 starts at byte 17*128 = 2176 and points at 2176 + 128; its step 16 wraps to step 0
    assert int(words[2176 // 8]) == base + 2176 + 128
    assert int(words[(2176 + 16 * 128) // 8]) == base + 2176
    # follow block 2's chain (as the kernel does from buf + p0 * 2): 17 distinct lines, then back
    start = base + 2 * args.p0
    p, seen = start, []
    for _ in range(17):
        seen.append(p)
        p = int(words[(p - base) // 8])
    assert p == start and len(set(seen)) == 17 and len({x // 128 for x in seen}) == 17
    # every element is written by exactly one block: 3 blocks x 17 steps
    assert int(np.count_nonzero(words)) == 3 * 17


def test_overlapping_chase_chains_are_rejected(suite):
    case = suite.case("lat_ldg_dram_n64")          # block_bytes 128, stride 65920
    launch = S.launch_for(case, 1, 600)            # 600 blocks x 128 B > stride: chains collide
    args = S.arguments(case, launch)
    with pytest.raises(S.SuiteError, match="overlap"):
        S.buffer_contents(case, launch, args.buffer_bytes, 0)


def test_bad_manifest_is_reported_with_file_and_case(tmp_path):
    (tmp_path / "k.cu").write_text("// empty\n")
    bad = tmp_path / "cases.yaml"
    bad.write_text("cases:\n  - {name: a, kernel: a, source: k.cu, group: nosuch}\n")
    with pytest.raises(S.SuiteError, match=r"cases.yaml: case 'a': group 'nosuch'"):
        S.load(bad)
    bad.write_text("cases:\n  - {name: a, kernel: a, source: missing.cu, group: bank}\n")
    with pytest.raises(S.SuiteError, match="source 'missing.cu' not found"):
        S.load(bad)
    bad.write_text("cases:\n  - {name: 'a{n}', kernel: a, source: k.cu, group: bank, for: {n: [1, 1]}}\n")
    with pytest.raises(S.SuiteError, match="duplicate case name 'a1'"):
        S.load(bad)
    bad.write_text("cases: [\n")
    with pytest.raises(TegError, match=r"cases.yaml:\d+: invalid YAML"):
        S.load(bad)


def test_select(suite):
    assert {c.group for c in suite.select(groups=["hongkim"])} == {"hongkim"}
    assert [c.name for c in suite.select(["lat_ffma_n*"])] == ["lat_ffma_n32", "lat_ffma_n64", "lat_ffma_n128"]
    with pytest.raises(S.SuiteError, match="no case matches"):
        suite.select(["nope*"])


# ------------------------------------------------------------------------------------ nvcc

nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module", params=["sm_80", "sm_90"])
def cubins(request, suite, tmp_path_factory):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    out = tmp_path_factory.mktemp(f"cubin_{request.param}")
    paths = S.compile_suite(suite, request.param, out)
    funcs: dict[str, list[str]] = {}
    for p in paths.values():
        funcs.update(_sass_functions(p))
    return request.param, paths, funcs


def _resources(cubin: Path) -> dict[str, dict[str, int]]:
    """``cuobjdump -res-usage``: per function REG, STACK, SHARED …"""
    text = subprocess.run([_cuobjdump(), "-res-usage", str(cubin)], capture_output=True, text=True, check=True).stdout
    out = {}
    for name, usage in re.findall(r"Function ([A-Za-z_0-9]+):\s*\n\s*(.*)", text):
        out[name] = {k: int(v) for k, v in re.findall(r"([A-Z]+)(?:\[\d+\])?:(\d+)", usage)}
    return out


def _sass_functions(cubin: Path) -> dict[str, list[str]]:
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not installed")
    text = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    funcs = {}
    for chunk in re.split(r"\n\s*Function : ", text)[1:]:
        name = chunk.split("\n", 1)[0].strip()
        funcs[name] = [m.group(2) for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", chunk)]
    return funcs


@pytest.mark.nvcc
def test_suite_compiles_and_every_kernel_exists(cubins, suite):
    arch, paths, kernels = cubins
    assert set(paths) == set(suite.sources())
    missing = sorted({c.kernel for c in suite.cases} - set(kernels))
    assert not missing, f"{arch}: kernels named in cases.yaml but not compiled: {missing}"
    assert "teg_l2_flush" in kernels


@pytest.mark.nvcc
def test_every_block_size_fits_and_nothing_spills(cubins, suite):
    """The largest block a case launches must fit the 64 K registers of an SM, and no kernel may
    spill (local-memory traffic inside the measured region would distort it)."""
    arch, paths, _ = cubins
    res = {}
    for p in paths.values():
        res.update(_resources(p))
    for case in suite.cases:
        r = res[case.kernel]
        assert r["STACK"] == 0, f"{arch} {case.kernel}: {r['STACK']} bytes of stack (spills)"
        assert r["REG"] * 32 * case.max_warps_per_block <= 65536, f"{arch} {case.kernel}: {r['REG']} registers"


@pytest.mark.nvcc
def test_chains_keep_their_steps_between_the_clock_reads(cubins, suite):
    """Each calibrating kernel has exactly `steps` of its step opcodes (modulo setup code the
    compiler may schedule inside, which the slope fit cancels) between its two CS2R reads."""
    arch, _, funcs = cubins
    sm = int(arch[3:])
    checked = 0
    for case in suite.cases:
        cal = case.calibration_values()
        if not cal:
            continue
        ops = funcs[case.kernel]
        clocks = [i for i, op in enumerate(ops) if op.startswith("CS2R")]
        assert len(clocks) == 2, f"{case.kernel}: expected two clock reads, found {len(clocks)}"
        inside = Counter(ops[clocks[0] + 1:clocks[1]])
        step = cal["step_sm90"] if (sm >= 90 and "step_sm90" in cal) else cal["step"]
        for op in set(step):
            want = cal["steps"] * step.count(op)
            have = sum(n for full, n in inside.items() if full == op or full.startswith(op + "."))
            assert want <= have <= want + 8, f"{arch} {case.kernel}: {have} x {op} between the clocks, expected {want}"
        checked += 1
    assert checked >= 90
