"""Bad Accel-Sim input: each problem is one TraceFormatError line naming file and line, and a failed
conversion leaves nothing behind."""

from __future__ import annotations

import lzma
import re
from pathlib import Path

import pytest

import teg.trace as tt
from teg.trace import TraceFormatError, TraceUnsupportedError
from test_trace_synth import Block, Row, kernel_text

GOOD = kernel_text([Block((0, 0, 0), [[Row(0x10, 0xFFFFFFFF, "S2R", ["R0"]),
                                        Row(0x20, 0x3, "LDG.E.64", ["R4"], ["R2"], mem=True, mode=1, addrs=[0, 8])],
                                       [Row(0x10, 0x1, "EXIT")]])])


def lines_of(text: str) -> list[str]:
    return text.split("\n")


def line_no(text: str, needle: str) -> int:
    """1-based number of the first line containing ``needle``."""
    return next(i for i, ln in enumerate(lines_of(text), 1) if needle in ln)


def fails(tmp_path: Path, text: str, name="kernel-1.traceg", exc=TraceFormatError) -> str:
    p = tmp_path / name
    p.write_text(text)
    out = tmp_path / "out.native"
    with pytest.raises(exc) as ei:
        tt.convert(p, out)
    msg = str(ei.value)
    assert "\n" not in msg
    assert not out.exists()
    assert [f.name for f in tmp_path.iterdir()] == [name]      # no partial output left behind
    return msg


def test_good_text_reads(tmp_path):
    p = tmp_path / "kernel-1.traceg"
    p.write_text(GOOD)
    assert tt.load(p, cache=False).kernels[0].num_rows == 3


def test_truncated_file(tmp_path):
    text = GOOD[: GOOD.index("0020 00000003")]      # ends after a complete line of warp 0
    msg = fails(tmp_path, text)
    assert msg.startswith(str(tmp_path / "kernel-1.traceg") + ":")
    assert "truncated" in msg and "insts = 2 at line" in msg


def test_truncated_mid_line(tmp_path):
    text = GOOD[: GOOD.index("0x0 8") + 3]           # "... 8 1 0x0" — stride missing
    msg = fails(tmp_path, text)
    assert f"kernel-1.traceg:{line_no(GOOD, '0020 00000003')}: cannot parse line" in msg


def test_truncated_before_end_tb(tmp_path):
    text = GOOD[: GOOD.rindex("#END_TB")]
    assert "truncated: the file ends inside a thread block" in fails(tmp_path, text)


def test_truncated_header(tmp_path):
    assert "truncated" in fails(tmp_path, "-kernel name = x\n-kernel id = 1\n")


def test_insts_count_too_large_and_too_small(tmp_path):
    n = line_no(GOOD, "insts = 2")
    msg = fails(tmp_path, GOOD.replace("insts = 2", "insts = 3"))
    assert f"kernel-1.traceg:{n}: insts = 3 here, but 2 instruction lines follow" in msg
    msg = fails(tmp_path, GOOD.replace("insts = 2", "insts = 1"))
    assert f"kernel-1.traceg:{n}: insts = 1 here, but more instruction lines follow" in msg


def test_unknown_address_mode(tmp_path):
    n = line_no(GOOD, "0020 00000003")
    msg = fails(tmp_path, GOOD.replace("8 1 0x0 8", "8 7 0x0 8"))
    assert f":{n}: unknown address mode 7" in msg


@pytest.mark.parametrize("mode", [3, 4])
def test_tma_modes_are_unsupported_not_misread(tmp_path, mode):
    msg = fails(tmp_path, GOOD.replace("8 1 0x0 8", f"8 {mode} 2 0x0 8"), exc=TraceUnsupportedError)
    assert f"TMA address mode {mode}" in msg and "not supported" in msg


def test_tma_opcode_in_v6_is_unsupported(tmp_path):
    r = Row(0x10, 0x1, "UTMALDG.2D", [], ["UR4"], imm=0)
    text = kernel_text([Block((0, 0, 0), [[r], []])], version=6)
    text = text.replace("UTMALDG.2D 1 UR4 0 0", "UTMALDG.2D 1 UR4 16 0x7f0000 0 4096 0 3 1 0x7f0000000000 0")
    assert "TMA instruction" in fails(tmp_path, text, exc=TraceUnsupportedError)


@pytest.mark.parametrize("garbage", ["hello world", "0010 ffffffff 1 Q4 MOV 0 0", "0010 fffffffff0 0 EXIT 0 0",
                                     "0010 ffffffff 0 EXIT 0 0 7 extra", "0010 ffffffff 0 EXIT zero 0",
                                     "-kernel name = second"])
def test_garbage_line(tmp_path, garbage):
    text = GOOD.replace("0010 00000001 0 EXIT 0 0 ", garbage)
    msg = fails(tmp_path, text)
    assert re.search(rf"kernel-1\.traceg:{line_no(text, garbage)}: ", msg), msg


def test_structure_errors(tmp_path):
    assert "outside a warp" in fails(tmp_path, GOOD.replace("warp = 0\ninsts = 2\n", ""))
    assert "#BEGIN_TB inside" in fails(tmp_path, GOOD.replace("#END_TB", "#BEGIN_TB", 1))
    assert "warp 2 out of range" in fails(tmp_path, GOOD.replace("warp = 1", "warp = 2"))
    assert "outside the grid" in fails(tmp_path, GOOD.replace("thread block = 0,0,0", "thread block = 9,0,0"))


def test_kernelslist_problems(tmp_path):
    (tmp_path / "kernel-1.traceg").write_text(GOOD)
    kl = tmp_path / "kernelslist.g"
    kl.write_text("MemcpyHtoD,0x0000000000001000,64\nkernel-1.traceg\nkernel-2.traceg\n")
    with pytest.raises(TraceFormatError, match=r"kernelslist\.g:3: kernel file kernel-2\.traceg not found"):
        tt.load(kl, cache=False)
    kl.write_text("MemcpyHtoD,0x1000\nkernel-1.traceg\n")
    with pytest.raises(TraceFormatError, match=r"kernelslist\.g:1: malformed copy line"):
        tt.load(kl, cache=False)
    kl.write_text("kernel-1.traceg\nfoo bar\n")
    with pytest.raises(TraceFormatError, match=r"kernelslist\.g:2: unexpected line"):
        tt.load(kl, cache=False)
    kl.write_text("kernel-1.tracez\n")
    with pytest.raises(TraceUnsupportedError, match=r"kernelslist\.g:1: .*tracez"):
        tt.load(kl, cache=False)


def test_corrupted_xz(tmp_path):
    data = lzma.compress(GOOD.encode())
    (tmp_path / "kernel-1.traceg.xz").write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match=r"kernel-1\.traceg\.xz.*(truncated|corrupted)"):
        tt.load(tmp_path / "kernel-1.traceg.xz", cache=False)


def test_bad_header_value(tmp_path):
    msg = fails(tmp_path, GOOD.replace("-grid dim = (4,2,1)", "-grid dim = (4,x,1)"))
    assert f":{line_no(GOOD, '-grid dim')}: bad value" in msg


def test_missing_input(tmp_path):
    with pytest.raises(FileNotFoundError):
        tt.load(tmp_path / "nope.traceg")
