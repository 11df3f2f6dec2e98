"""Finding cuobjdump (teg.sass.binaries) and reading CUDA binaries through it (teg.sass.reader)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from teg.sass import DisassemblyError, ToolNotFoundError, parse_file
from teg.sass import binaries
from teg.sass.reader import is_binary

FIXTURES = Path(__file__).parent / "fixtures" / "sass"
ADDR_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/", re.M)


def _have_cuobjdump() -> bool:
    try:
        binaries.find_tool("cuobjdump")
    except ToolNotFoundError:
        return False
    return True


needs_cuobjdump = pytest.mark.skipif(not _have_cuobjdump(), reason="cuobjdump not installed")


def test_missing_tool_error_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(binaries, "wheel_bin_dirs", lambda: [])
    monkeypatch.setattr(binaries, "candidate_dirs",
                        lambda name="": [tmp_path / "cuda" / "bin", tmp_path / "nothing" / "bin"])
    with pytest.raises(ToolNotFoundError) as info:
        binaries.find_tool("cuobjdump")
    msg = str(info.value)
    assert "cuobjdump not found" in msg and "pip install teg[cuda]" in msg and "PATH" in msg


def test_cuda_home_is_searched(monkeypatch, tmp_path):
    bindir = tmp_path / "cuda" / "bin"
    bindir.mkdir(parents=True)
    exe = bindir / "nvdisasm"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.setattr(binaries, "wheel_bin_dirs", lambda: [])
    assert binaries.find_tool("nvdisasm") == exe


def _fake_wheel(site: Path, tool: str, mode: int = 0o755) -> Path:
    """A pip-wheel layout: site/nvidia/cu99/bin/<tool> plus its distribution's RECORD."""
    exe = site / "nvidia" / "cu99" / "bin" / tool
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(mode)
    info = site / "nvidia_cuda_fake-99.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-cuda-fake\nVersion: 99.0\n")
    (info / "RECORD").write_text(f"nvidia/cu99/bin/{tool},,\nnvidia_cuda_fake-99.0.dist-info/METADATA,,\n")
    return exe


def _no_other_places(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)


def test_wheel_found_through_the_nvidia_namespace(monkeypatch, tmp_path):
    exe = _fake_wheel(tmp_path / "site", "faketool")
    _no_other_places(monkeypatch, tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(binaries, "wheel_record_dirs", lambda name: [])
    assert binaries.find_tool("faketool") == exe


def test_wheel_found_through_its_file_list(monkeypatch, tmp_path):
    """Where the namespace lookup finds nothing (another package named nvidia first on sys.path),
    the distribution's RECORD still names the tool."""
    exe = _fake_wheel(tmp_path / "site", "faketool")
    _no_other_places(monkeypatch, tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(binaries, "wheel_bin_dirs", lambda: [])
    assert binaries.find_tool("faketool") == exe


def test_tool_that_is_not_executable_is_named(monkeypatch, tmp_path):
    exe = _fake_wheel(tmp_path / "site", "faketool", mode=0o644)
    _no_other_places(monkeypatch, tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(ToolNotFoundError, match=f"faketool found but not executable: {exe}"):
        binaries.find_tool("faketool")


def test_binary_sniffing():
    assert is_binary(b"\x7fELF\x02\x01")
    assert is_binary(b"\x50\xed\x55\xba\x01\x00")
    assert not is_binary(b"\tcode for sm_90\n")


@needs_cuobjdump
def test_cubin_is_disassembled_with_cuobjdump():
    programs = parse_file(FIXTURES / "kernels.sm_89.cubin")
    listing = (FIXTURES / "kernels.sm_89.sass").read_text()
    assert sum(len(p) for p in programs) == len(ADDR_LINE.findall(listing))
    assert {p.arch for p in programs} == {"sm_89"}
    assert "(cuobjdump -sass)" in programs[0].source


@needs_cuobjdump
def test_non_cuda_binary_is_a_clear_error(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x7fELF" + bytes(200))
    with pytest.raises(DisassemblyError, match="cuobjdump"):
        parse_file(junk)


@needs_cuobjdump
def test_disassembly_is_cached_by_content(monkeypatch, tmp_path):
    """The second disassembly of the same bytes (under another name) comes from the cache, not from
    cuobjdump; other bytes are disassembled anew; a rejected file leaves no entry."""
    from teg.sass import reader

    monkeypatch.setenv("TEG_CACHE_DIR", str(tmp_path / "cache"))
    cubin = (FIXTURES / "kernels.sm_89.cubin").read_bytes()
    (tmp_path / "a.cubin").write_bytes(cubin)
    (tmp_path / "b.cubin").write_bytes(cubin)
    first = reader.disassemble(tmp_path / "a.cubin")
    assert len(list((tmp_path / "cache" / "sass").rglob("*.sass"))) == 1
    calls = []
    real = reader.run_tool
    monkeypatch.setattr(reader, "run_tool", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert reader.disassemble(tmp_path / "b.cubin") == first and calls == []
    assert sum(len(p) for p in parse_file(tmp_path / "b.cubin")) == len(ADDR_LINE.findall(first)) and calls == []
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x7fELF" + bytes(200))
    with pytest.raises(DisassemblyError):
        reader.disassemble(junk)
    assert len(calls) == 1 and len(list((tmp_path / "cache" / "sass").rglob("*.sass"))) == 1
