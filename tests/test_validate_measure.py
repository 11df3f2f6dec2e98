"""`teg validate measure` without a GPU: per-SM reduction of the clock64 records, repeat summary,
and a clean one-line error when the CUDA driver is missing."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from teg import TegError
from teg.cli import main
from teg.validate import measure as M


def test_reduce_records_spans_each_sm_separately():
    # SM 3 ran two blocks: [1000, 1500] and [1200, 1900] -> 900 cycles; SM 7 one block 50..250 -> 200;
    # SM 9 one block 10_000..10_400 -> 400 (its counter is unrelated to SM 3's). Median over SMs: 400.
    rec = np.array([[1000, 1500, 3, 0], [50, 250, 7, 0], [1200, 1900, 3, 0], [10_000, 10_400, 9, 0]], np.uint64)
    red = M.reduce_records(rec.ravel())
    assert red.per_sm == {3: 900.0, 7: 200.0, 9: 400.0}
    assert red.blocks_per_sm == {3: 2, 7: 1, 9: 1}
    assert red.cycles == 400.0


def test_reduce_records_rejects_missing_blocks():
    rec = np.array([[10, 20, 0, 0], [0, 0, 0, 0]], np.uint64)
    with pytest.raises(M.CudaError, match="no timing record"):
        M.reduce_records(rec)
    with pytest.raises(M.CudaError, match="end < start"):
        M.reduce_records(np.array([[30, 20, 1, 0]], np.uint64))


def test_summarize_median_and_spread():
    s = M.summarize([100.0, 104.0, 98.0, 102.0, 101.0])
    assert s["cycles"] == 101.0
    assert (s["cycles_min"], s["cycles_max"], s["repeats"]) == (98.0, 104.0, 5)
    assert s["spread"] == pytest.approx(6 / 101)


def test_no_driver_is_a_clear_teg_error(monkeypatch):
    monkeypatch.setenv("TEG_LIBCUDA", "/nonexistent/libcuda.so.1")
    with pytest.raises(TegError, match="cannot load the CUDA driver library"):
        M.Driver()
    res = CliRunner().invoke(main, ["validate", "measure", "--case", "lat_ffma_n32", "-o", "/dev/null"])
    assert res.exit_code == 2
    assert res.output.startswith("teg: error: cannot load the CUDA driver library")
    assert len(res.output.strip().splitlines()) == 1


# ------------------------------------------------------- the whole pipeline on a fake driver

@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory):
    import shutil
    import subprocess
    from pathlib import Path

    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None or shutil.which("nvcc") is None:
        pytest.skip("needs a C compiler and nvcc")
    src = Path(__file__).parent / "data" / "validation" / "fake_libcuda.c"
    tmp = tmp_path_factory.mktemp("fakecuda")
    lib = tmp / "libcuda_fake.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
    return lib, tmp / "cache"      # the cubin cache is shared by the tests of this module


def test_measure_pipeline_on_fake_driver(fake_driver, tmp_path, monkeypatch):
    """4 fake SMs; block g: start 1000+g, end start + 100*(warps per block) + p0, smid g % 4.
    With B blocks per SM an SM spans (B-1)*4 + 100*wpb + p0 cycles."""
    monkeypatch.setenv("TEG_LIBCUDA", str(fake_driver[0]))
    monkeypatch.setenv("TEG_CACHE", str(fake_driver[1]))
    out = tmp_path / "m.json"
    res = CliRunner().invoke(main, ["validate", "measure", "--case", "bank_s2_n32", "--case", "transpose_naive",
                                    "--warps", "1,8,64", "--repeats", "3", "-q", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "Fake H200 (sm_90, 4 SMs, 1980.0 MHz, driver 12.4)" in res.output
    import json
    doc = json.loads(out.read_text())
    assert doc["kind"] == "measured" and doc["synthetic"] is False
    assert doc["gpu"]["num_sms"] == 4 and doc["arch"] == "sm_90"
    bank = {r["warps"]: r for r in doc["cases"][0]["results"]}
    # bank_s2: p0 = 2; blocks of min(W, 32) warps
    assert bank[1]["cycles"] == 100 * 1 + 2
    assert bank[8]["cycles"] == 100 * 8 + 2
    assert bank[64]["cycles"] == (2 - 1) * 4 + 100 * 32 + 2      # 2 blocks of 32 warps per SM
    assert bank[64]["grid"] == 8 and bank[64]["observed_blocks_per_sm"] == [2, 2]
    assert bank[64]["repeats"] == 3 and bank[64]["spread"] == 0.0 and bank[64]["kernel_ms"] == 0.25
    tr = {r["warps"]: r for r in doc["cases"][1]["results"]}
    assert tr[64]["cycles"] == (8 - 1) * 4 + 100 * 8           # 8 blocks of 8 warps per SM, p0 = 0
    assert doc["cases"][0]["calibrates"]["degree"] == 2


def test_measure_reports_driver_failures(fake_driver, tmp_path, monkeypatch):
    monkeypatch.setenv("TEG_LIBCUDA", str(fake_driver[0]))
    monkeypatch.setenv("TEG_CACHE", str(fake_driver[1]))
    monkeypatch.setenv("FAKE_FAIL_LAUNCH", "1")
    res = CliRunner().invoke(main, ["validate", "measure", "--case", "bank_s2_n32", "--warps", "1", "-o",
                                    str(tmp_path / "m.json")])
    assert res.exit_code == 2
    assert "cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)" in res.output
