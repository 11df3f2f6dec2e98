"""Regression tests of issue #25, command-line arguments: every bad value of the issue ends in one
``teg: error:`` line and exit status 2 — never a traceback, a runaway allocation or a number that
silently changes the result."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from teg.cli import main

ROOT = Path(__file__).resolve().parents[1]
SASS = ROOT / "traces" / "matmul_abt.sm_90.sass"
NPZ = ROOT / "traces" / "matmul_abt.sm_90.trace.npz"
CUBIN = ROOT / "tests" / "fixtures" / "emu" / "kernels.sm_90.cubin"
SIMPLETORCH = ROOT / "tests" / "data" / "traces" / "dp-performance-accel-sim" / "simpletorch"
SAXPY = ["--kernel", "saxpy", "--block", "32", "--arg", "n=32", "--arg", "a=2.0", "--arg", "x=arange:float32:32"]


def error_of(*args, tmp: Path | None = None) -> str:
    """The one ``teg: error:`` line of a command that must exit 2."""
    env = {"TEG_CACHE_DIR": str(tmp / "cache")} if tmp is not None else {}
    res = CliRunner(env=env).invoke(main, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code == 2, (res.exit_code, res.output)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("teg: error: "), res.stderr
    return lines[0]


@pytest.mark.parametrize("args, fragment", [
    (["--warps", ""], "--warps ''"),
    (["--warps", "1,x"], "comma-separated integers"),
    (["--warps", "99999999999999999999"], "at most 64 warps"),
    (["--warps", "1000"], "at most 64 warps"),
    (["--blocks-per-sm", "100000"], "--blocks-per-sm 100000"),
])
def test_sweep_points_beyond_an_sm_or_malformed(args, fragment):
    assert fragment in error_of("sweep", *args)


def test_estimate_blocks_per_sm_beyond_the_table_is_refused_not_clamped():
    assert "at most 32 blocks" in error_of("estimate", "--blocks-per-sm", "100000")


def test_sweep_default_points_stop_at_the_tables_warps_per_sm():
    """gt200 holds 32 warps per SM: the default sweep (TEG's 1 … 64) stops at 32."""
    listing3 = ROOT / "tests" / "fixtures" / "sass" / "teg_listing3.sass"
    res = CliRunner().invoke(main, ["sweep", "--sass", str(listing3), "--kernel", "_Z12fadd_latencyPfPj",
                                    "--machine", "gt200", "--csv"])
    assert res.exit_code == 0, res.output
    assert [int(r.split(",")[0]) for r in res.stdout.splitlines()[1:]] == [1, 2, 4, 8, 16, 32]


def test_device_as_sass_and_output_below_a_file(tmp_path):
    assert "/dev/zero: not a regular file" in error_of("estimate", "--sass", "/dev/zero")
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    line = error_of("trace", "run", CUBIN, *SAXPY, "--arg", "y=zeros:float32:32", "-o", blocker / "out.npz")
    assert "afile" in line


def test_trace_run_bad_grid_shmem_and_truncated_npy(tmp_path):
    y = ["--arg", "y=zeros:float32:32", "-o", tmp_path / "o.npz"]
    assert "bad launch dimension" in error_of("trace", "run", CUBIN, *SAXPY, *y, "--grid", "abc")
    assert "launch limits" in error_of("trace", "run", CUBIN, *SAXPY, *y, "--grid", "4294967296")
    assert "--shmem" in error_of("trace", "run", CUBIN, *SAXPY, *y, "--shmem", "18446744073709551616")
    good = tmp_path / "y.npy"
    np.save(good, np.zeros(32, np.float32))
    cut = tmp_path / "cut.npy"
    cut.write_bytes(good.read_bytes()[:100])
    line = error_of("trace", "run", CUBIN, *SAXPY, "--arg", f"y={cut}", "-o", tmp_path / "o2.npz")
    assert "cut.npy" in line and "not a readable .npy" in line


@pytest.mark.parametrize("value", ["-5", "nan", "inf", "0"])
def test_compare_measured_must_be_positive_and_finite(value):
    assert "measured cycles" in error_of("compare", "--trace", NPZ, "--sass", SASS, "--measured", value)


def test_compare_param_no_model_reads():
    assert "--param nosuch" in error_of("compare", "--trace", NPZ, "--sass", SASS, "--param", "nosuch=1")


def test_kernel_name_matching_several_kernels_is_an_error_listing_them(tmp_path):
    """``--kernel elementwise`` matches several kernels of the PyTorch trace: ``compare`` (one
    kernel) used to pick the first; now it lists them by id. (``estimate``, ``whatif``, ``sweep`` and
    ``trace info`` take the matching kernels as an application instead.)"""
    from teg.trace import KernelNotFoundError, load

    d = tmp_path / "st"
    shutil.copytree(SIMPLETORCH, d)
    line = error_of("compare", "--trace", d, "--kernel", "elementwise", "--machine", "sm_70", tmp=tmp_path)
    assert "matches 4 kernels" in line and "--kernel ID" in line
    tr = load(d, cache=tmp_path / "cache")
    assert tr.kernel("87").info.kernel_id == 87 and "reduce_kernel" in tr.kernel("87").info.name
    with pytest.raises(KernelNotFoundError, match="matches 2 kernels: id 5"):
        tr.kernel("reduce_kernel")
