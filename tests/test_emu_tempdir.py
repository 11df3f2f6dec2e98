"""`teg trace run` on a .cu leaves no temporary folder behind: the cubin nvcc writes lives in a
``teg-emu-*`` folder that is removed once the SASS and the cubin's metadata are read (also when
nvcc fails), unless the caller names a ``work_dir`` to keep it in."""

from __future__ import annotations

import shutil
import tempfile

import pytest

from teg.emu import EmulatorError, load_kernel

pytestmark = [pytest.mark.nvcc, pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")]

KERNEL = """
extern "C" __global__ void twice(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 2.0f * x[i];
}
"""


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """The temporary directory tempfile hands out, empty and private to the test."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def test_cu_compiled_in_a_folder_removed_after_reading(tmp_path, private_tmp):
    src = tmp_path / "twice.cu"
    src.write_text(KERNEL)
    prog, image = load_kernel(src, "twice", "sm_80")
    assert prog.name == "twice" and image.name == "twice"
    assert [op for op in (i.opcode for i in prog.instructions) if op.startswith("FMUL") or op.startswith("FADD")]
    assert list(private_tmp.iterdir()) == []


def test_failed_compile_leaves_nothing(tmp_path, private_tmp):
    src = tmp_path / "broken.cu"
    src.write_text("__global__ void k( { }\n")
    with pytest.raises(EmulatorError, match="nvcc failed"):
        load_kernel(src, None, "sm_80")
    assert list(private_tmp.iterdir()) == []


def test_work_dir_keeps_the_cubin(tmp_path, private_tmp):
    src = tmp_path / "twice.cu"
    src.write_text(KERNEL)
    keep = tmp_path / "keep"
    keep.mkdir()
    load_kernel(src, "twice", "sm_80", work_dir=keep)
    assert [p.name for p in keep.iterdir()] == ["twice.sm_80.cubin"]
    assert list(private_tmp.iterdir()) == []
