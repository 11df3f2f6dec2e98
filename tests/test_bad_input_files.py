"""Regression tests of issue #25 (bad input never crashes, hangs or passes silently), file readers:
each damaged SASS listing, machine table, native trace and Accel-Sim trace of the issue ends in a
one-line ``teg: error:`` naming the file (and line or member) and the problem, exit status 2 —
never a traceback, a hang, or a changed estimate."""

from __future__ import annotations

import io
import json
import shutil
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from teg.cli import main

ROOT = Path(__file__).resolve().parents[1]
SASS = ROOT / "traces" / "matmul_abt.sm_90.sass"
NPZ = ROOT / "traces" / "matmul_abt.sm_90.trace.npz"
LISTING3 = ROOT / "tests" / "fixtures" / "sass" / "teg_listing3.sass"
MATRIXMUL = ROOT / "tests" / "data" / "traces" / "microgpusim" / "matrixmul-32-32-trace"


def run(*args, tmp: Path | None = None):
    env = {"TEG_CACHE_DIR": str(tmp / "cache")} if tmp is not None else {}
    return CliRunner(env=env).invoke(main, [str(a) for a in args])


def one_line_error(res, *fragments: str) -> str:
    """The single ``teg: error:`` line of an exit-2 result, containing every fragment."""
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code == 2, (res.exit_code, res.output)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("teg: error: "), res.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


# ---- SASS ----------------------------------------------------------------------------------------

def _listing(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "k.sass"
    p.write_text(text)
    return p


def _edit_line(text: str, old: str, new: str) -> tuple[str, int]:
    """``text`` with the first line holding ``old`` changed to hold ``new``, and that line's number."""
    lines = text.split("\n")
    k = next(i for i, ln in enumerate(lines) if old in ln)
    lines[k] = lines[k].replace(old, new, 1)
    return "\n".join(lines), k + 1


def test_twenty_digit_address_is_refused_by_estimate(tmp_path):
    text, line = _edit_line(SASS.read_text(), "/*0010*/", "/*f0000000000000000010*/")
    res = run("estimate", "--sass", _listing(tmp_path, text), "--trace", NPZ)
    one_line_error(res, f"k.sass:{line}:", "address")


@pytest.mark.parametrize("new, at", [("/*0000*/", 0), ("/*0100*/", 2)])
def test_duplicated_or_out_of_order_address(tmp_path, new, at):
    """A duplicated address is reported on its line; one too high, on the next instruction's line
    (two lines further: cuobjdump prints each instruction on two)."""
    text, line = _edit_line(SASS.read_text(), "/*0020*/", new)
    one_line_error(run("parse", _listing(tmp_path, text)), f"k.sass:{line + at}:", "does not follow")


@pytest.mark.parametrize("imm", ["1e999", "nan", "0x"])
def test_bad_immediates(tmp_path, imm):
    head = "\tcode for sm_90\n\t\tFunction : k\n"
    p = _listing(tmp_path, head + f"        /*0000*/   FADD R2, R2, {imm} ;\n")
    one_line_error(run("parse", p), "k.sass:3:", "immediate")


def test_truncated_instruction(tmp_path):
    p = _listing(tmp_path, "\tcode for sm_1x\n\t\tFunction : k\n        /*0000*/   FADD32 R ;\n")
    one_line_error(run("parse", p), "k.sass:3:", "truncated operand")


def test_absurd_operand_count_is_refused_quickly(tmp_path):
    """The operand parser was quadratic (2 M operands took over a minute); now a line with more
    operands than any instruction has is refused, in linear time."""
    for n, problem in ((10_001, "10003 operands"), (2_000_000, "longer than")):
        p = _listing(tmp_path, "\tcode for sm_90\n\t\tFunction : k\n        /*0000*/   FFMA R1, " + "R2, " * n + "R3 ;\n")
        t0 = time.perf_counter()
        one_line_error(run("parse", p), "k.sass:3:", problem)
        assert time.perf_counter() - t0 < 5


def test_device_non_utf8_and_long_lines_are_refused_by_name(tmp_path):
    one_line_error(run("estimate", "--sass", "/dev/zero"), "/dev/zero", "not a regular file")
    bad = tmp_path / "latin.sass"
    bad.write_bytes(b"\tcode for sm_90\n\t\tFunction : caf\xe9\n")
    one_line_error(run("parse", bad), "latin.sass:2:", "not UTF-8")
    long = _listing(tmp_path, "\tcode for sm_90\n\t\tFunction : k\n// " + "x" * 100_000 + "\n")
    one_line_error(run("parse", long), "k.sass:3:", "longer than")


# ---- machine tables ------------------------------------------------------------------------------

DERIVED = """name: mine
description: "test table"
extends: sm_90
{body}
"""


def _table(tmp_path: Path, body: str, name: str = "my.yaml") -> Path:
    p = tmp_path / name
    p.write_text(DERIVED.format(body=body))
    return p


@pytest.mark.parametrize("body, key", [
    ('clock_mhz: {value: .nan, source: "x"}', "clock_mhz"),
    ('clock_mhz: {value: .inf, source: "x"}', "clock_mhz"),
    ('latencies:\n  fp32: {execution: .inf, issue_multi: 1, issue_same: 1, source: "x"}', "latencies.fp32.execution"),
    ('latencies:\n  fp32: {execution: 1.0e+300, issue_multi: 1, issue_same: 1, source: "x"}', "latencies.fp32.execution"),
    ('latencies:\n  fp32: {execution: 4, issue_multi: 9223372036854775808, issue_same: 1, source: "x"}',
     "latencies.fp32.issue_multi"),
    ('num_sms: {value: 100000000000000000000, source: "x"}', "num_sms"),
    ('memory:\n  source: "x"\n  l2: {size_bytes: 1099511627776, line_bytes: 128, sector_bytes: 32, assoc: 16, latency: 200}',
     "memory.l2.size_bytes"),
    ('shared:\n  source: "x"\n  banks: 1000000000', "shared.banks"),
])
def test_out_of_range_table_values(tmp_path, body, key):
    one_line_error(run("machines", "show", _table(tmp_path, body)), "my.yaml:", key, "bad value")


def test_latin1_table_duplicate_keys_aliases_and_nesting(tmp_path):
    p = tmp_path / "latin.yaml"
    p.write_bytes(DERIVED.format(body="").replace('"test table"', '"caf\xe9"').encode("latin-1"))
    one_line_error(run("machines", "show", p), "latin.yaml:2:", "not UTF-8")
    dup = _table(tmp_path, 'clock_mhz: {value: 1000, source: "x"}\nclock_mhz: {value: 2000, source: "y"}')
    one_line_error(run("machines", "show", dup), "my.yaml:5:", "duplicate key 'clock_mhz'")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + k)}: &{chr(98 + k)} [*{chr(97 + k)}, *{chr(97 + k)}, *{chr(97 + k)}]\n" for k in range(12))
    t0 = time.perf_counter()
    one_line_error(run("machines", "show", _table(tmp_path, bomb)), "my.yaml:4:", "aliases")
    one_line_error(run("machines", "show", _table(tmp_path, "x: " + "[" * 60_000)), "my.yaml:4:", "nested deeper")
    assert time.perf_counter() - t0 < 5


def test_a_raised_finite_latency_never_makes_the_kernel_faster(tmp_path):
    """The fp32 latency of the bundled example raised step by step up to the plausible maximum:
    the estimate never decreases (an infinite or 1e300 latency used to make it faster)."""
    cycles = []
    for lat in (4, 8, 40, 400, 4000, 40000):
        p = _table(tmp_path, f'latencies:\n  fp32: {{execution: {lat}, issue_multi: 1, issue_same: 1, source: "x"}}',
                   name=f"lat{lat}.yaml")
        res = run("estimate", "--machine", p, "--json")
        assert res.exit_code == 0, res.output
        cycles.append(json.loads(res.stdout)["cycles"])
    assert cycles == sorted(cycles) and cycles[-1] > cycles[0], cycles


# ---- native traces -------------------------------------------------------------------------------

def _members() -> dict[str, bytes]:
    with zipfile.ZipFile(NPZ) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _write_npz(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for n, d in members.items():
            zf.writestr(n, d)
    return path


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def _with_column(name: str, edit) -> dict[str, bytes]:
    m = _members()
    key = f"k0000/{name}.npy"
    a = np.load(io.BytesIO(m[key])).copy()
    edit(a)
    m[key] = _npy(a)
    return m


def _with_meta(edit) -> dict[str, bytes]:
    m = _members()
    meta = json.loads(m["meta.json"])
    edit(meta)
    m["meta.json"] = json.dumps(meta).encode()
    return m


def _estimate_npz(tmp_path: Path, members: dict[str, bytes]):
    return run("estimate", "--sass", SASS, "--trace", _write_npz(tmp_path / "t.npz", members), tmp=tmp_path)


def _set(a, i, v):
    a[i] = v


@pytest.mark.parametrize("column, edit, fragments", [
    ("warp_start", lambda a: _set(a, 1, a[2] + 5), ("warp_start", "decreases")),
    ("mem_width", lambda a: _set(a, np.flatnonzero(a)[0], 32767), ("mem_width", "32767")),
    ("mem_width", lambda a: _set(a, np.flatnonzero(a)[0], -4), ("mem_width", "-4")),
    ("dst", lambda a: _set(a, (0, 0), 32767), ("column dst, row 0", "32767")),
    ("warp_block", lambda a: _set(a, 0, -1), ("warp_block", "-1")),
])
def test_native_column_values_out_of_range(tmp_path, column, edit, fragments):
    one_line_error(_estimate_npz(tmp_path, _with_column(column, edit)), "t.npz/k0000", *fragments)


@pytest.mark.parametrize("edit, fragments", [
    (lambda m: m["kernels"][0].__setitem__("opcodes", [1, 2]), ("opcodes",)),
    (lambda m: m["kernels"][0].__setitem__("rows", float("nan")), ("rows",)),
    (lambda m: m["kernels"][0]["info"].__setitem__("grid", [1.5, 1, 1]), ("grid",)),
    (lambda m: m["kernels"][0]["info"].__setitem__("grid", [2**32, 1, 1]), ("grid", "launch limits")),
    (lambda m: m["kernels"][0]["info"].__setitem__("nregs", "many"), ("nregs",)),
    (lambda m: m["kernels"][0].__setitem__("dir", "../k0000"), ("dir",)),
])
def test_native_meta_of_the_wrong_type_or_range(tmp_path, edit, fragments):
    one_line_error(_estimate_npz(tmp_path, _with_meta(edit)), "t.npz", *fragments)


def test_damaged_npy_header_and_empty_npz(tmp_path):
    m = _members()
    key = "k0000/pc.npy"
    raw = bytearray(m[key])
    raw[raw.index(b"'shape'") + 1] ^= 0x40          # a flipped bit inside the header's dict literal
    m[key] = bytes(raw)
    one_line_error(_estimate_npz(tmp_path, m), "t.npz", "k0000/pc", "header")
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    one_line_error(run("estimate", "--sass", SASS, "--trace", empty), "empty.npz", "not a readable teg trace")


def test_npz_columns_are_memory_mapped_not_loaded():
    """Every column of a ``.npz`` trace is a view of the archive file (memory stays flat in the
    trace length), and its values equal what numpy reads from the member."""
    from teg.trace import load_native

    kt = load_native(NPZ).kernels[0]
    with np.load(NPZ) as z:
        for name in ("pc", "dst", "addresses", "warp_start"):
            col = getattr(kt, name)
            assert isinstance(col, np.memmap), name
            assert np.array_equal(np.asarray(col), z[f"k0000/{name}"])


def test_compressed_npz_members_are_inflated_once(tmp_path, monkeypatch):
    """A ``.npz`` compressed by someone else cannot be mapped: each member is inflated once into the
    trace cache and mapped from there (the second load reuses the files)."""
    from teg.trace import load_native

    z = tmp_path / "c.npz"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, d in _members().items():
            zf.writestr(n, d)
    monkeypatch.setenv("TEG_CACHE_DIR", str(tmp_path / "cache"))
    a = load_native(z).kernels[0]
    spilled = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.npy")}
    b = load_native(z).kernels[0]
    assert "pc.npy" in {p.name for p in spilled}
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.npy")} == spilled
    assert isinstance(b.pc, np.memmap) and np.array_equal(np.asarray(a.pc), np.asarray(b.pc))
    with np.load(NPZ) as ref:
        assert np.array_equal(np.asarray(b.addresses), ref["k0000/addresses"])


# ---- Accel-Sim traces ----------------------------------------------------------------------------

def _accelsim_copy(tmp_path: Path, line: int | None = None, old: str = "", new: str = "") -> Path:
    d = tmp_path / "mm"
    shutil.copytree(MATRIXMUL, d)
    if line is not None:
        f = d / "kernel-1.traceg"
        lines = f.read_text().split("\n")
        assert old in lines[line - 1], lines[line - 1]
        lines[line - 1] = lines[line - 1].replace(old, new)
        f.write_text("\n".join(lines))
    return d


@pytest.mark.parametrize("command", [["estimate"], ["whatif"], ["sweep", "--warps", "1,2"]])
def test_unknown_opcode_on_a_later_row_of_its_pc_is_reported(tmp_path, command):
    """The issue's case: FOOBAR replaces IADD32I on line 186 of the matrixmul trace, a row that is not
    the first of its PC; lowering used to take each PC's opcode from its first row and exit 0."""
    d = _accelsim_copy(tmp_path, 186, "IADD32I", "FOOBAR")
    res = run(*command, "--trace", d, "--machine", "sm_61", tmp=tmp_path)
    one_line_error(res, "FOOBAR")
    res = run(*command, "--trace", d, "--machine", "sm_61", "--unknown", "alu", tmp=tmp_path)
    assert res.exit_code != 0 and "FOOBAR" in res.stderr


@pytest.mark.parametrize("line, old, new, fragments", [
    (3, "(1,1,1)", "(4294967296,1,1)", ("kernel-1.traceg:3:", "grid dim", "launch limits")),
    (5, "-shmem = 8192", "-shmam = 8192", ("kernel-1.traceg:", "'-shmem = …'")),
    (6, "-nregs = 30", "-nregs = 100000", ("kernel-1.traceg:6:", "nregs")),
    (186, "IADD32I 1 R16 0", "IADD32I 1 R16 0 99999999999999999999", ("kernel-1.traceg:186:", "cannot parse")),
    (186, "IADD32I 1 R16 0", "IADD32I 1 R16 0 9223372036854775808", ("kernel-1.traceg:186:", "cannot parse")),
])
def test_accelsim_header_and_trailing_tokens(tmp_path, line, old, new, fragments):
    d = _accelsim_copy(tmp_path, line, old, new)
    one_line_error(run("trace", "info", d, tmp=tmp_path), *fragments)


def test_loading_without_a_cache_leaves_no_temporary_folder(tmp_path, monkeypatch):
    """``load(cache=False)`` converts into a temporary folder and removes it once the columns are
    mapped; the trace stays readable."""
    import tempfile

    from teg.trace import load

    d = _accelsim_copy(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    kt = load(d, cache=False).kernels[0]
    assert list(tmp.iterdir()) == []
    assert kt.num_rows > 0 and int(np.asarray(kt.imm).shape[0]) == kt.num_rows


def test_trailing_immediate_is_read_from_tracer_v4_and_refused_before(tmp_path):
    from teg.trace import load

    d = _accelsim_copy(tmp_path, 186, "IADD32I 1 R16 0", "IADD32I 1 R16 0 -7")
    kt = load(d, cache=False).kernels[0]
    assert -7 in np.asarray(kt.imm).tolist()
    f = d / "kernel-1.traceg"
    f.write_text(f.read_text().replace("-accelsim tracer version = 4", "-accelsim tracer version = 3"))
    one_line_error(run("trace", "info", d, tmp=tmp_path), "kernel-1.traceg:186:", "cannot parse")
