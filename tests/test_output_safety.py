"""No user file is ever lost (issue 25): every writer of teg goes through teg.fileio.

Real processes are killed with SIGKILL at a chosen point of a write (a hook installed in the
child before the CLI runs: the n-th call of a function raises SIGKILL), then the previous output
must be intact and the next run must succeed and leave no temporary behind. A full disk is a
one-line error that leaves nothing; a user's own file is never overwritten without --force.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import teg.trace as tt
from teg import machine as machine_mod
from teg.cli import main
from teg.trace import codec

DATA = Path(__file__).parent / "data" / "traces"
VECTORADD = DATA / "microgpusim" / "vectoradd-100-32-trace"
MATRIXMUL = DATA / "microgpusim" / "matrixmul-32-32-trace"

_KILLER = """
import os, signal, sys
import importlib
mod, attr, after = sys.argv[1], sys.argv[2], int(sys.argv[3])
owner = importlib.import_module(mod)
path = attr.split(".")
for part in path[:-1]:
    owner = getattr(owner, part)
orig = getattr(owner, path[-1])
calls = [0]
def hook(*a, **k):
    calls[0] += 1
    if calls[0] >= after:
        os.kill(os.getpid(), signal.SIGKILL)
    return orig(*a, **k)
setattr(owner, path[-1], hook)
from teg.cli import main
main(sys.argv[4:], prog_name="teg")
"""


def run_killed(where: str, after: int, args: list[str]) -> subprocess.CompletedProcess:
    """Run ``teg ARGS`` in a child that SIGKILLs itself at the ``after``-th call of ``where``
    (``module:attribute``); the child must die of that signal."""
    mod, attr = where.split(":")
    res = subprocess.run([sys.executable, "-c", _KILLER, mod, attr, str(after), *args], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == -signal.SIGKILL, (res.returncode, res.stdout, res.stderr)
    return res


def teg_cli(args: list[str]):
    """The next run, in this process (the killed child is gone): exit code and output."""
    res = CliRunner().invoke(main, args)
    return res.exit_code, res.output


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".partial-" in p.name or ".old-" in p.name)


# ---- killed mid-write -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["out.npz", "out"])
def test_killed_conversion_keeps_the_previous_trace_and_the_next_run_is_clean(tmp_path, name):
    out = tmp_path / name
    tt.convert(VECTORADD, out)
    before = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    # the second frame: the kernel's rows are on disk, its warps and blocks not yet
    run_killed("teg.trace.codec:encode_frame", 2, ["trace", "convert", str(MATRIXMUL), str(out)])
    assert len(leftovers(tmp_path)) == 1                                    # the killed run's partial folder
    after = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*")
             if p.is_file() and ".partial-" not in str(p)}
    assert after == before                                                  # previous trace intact
    assert tt.load(out).kernels[0].num_rows == 344
    code, output = teg_cli(["trace", "convert", str(MATRIXMUL), str(out)])
    assert code == 0, output
    assert leftovers(tmp_path) == [] and sorted(p.name for p in tmp_path.iterdir()) == [name]
    assert tt.load(out).kernels[0].num_rows == 4416


@pytest.fixture()
def measured(tmp_path) -> Path:
    from test_validate_calibrate import synthetic

    p = tmp_path / "measured.json"
    p.write_text(json.dumps(synthetic(machine_mod.load("sm_90"))))
    return p


@pytest.mark.parametrize("where", ["os:fsync", "os:replace"])
def test_killed_calibrate_keeps_the_previous_table_and_the_next_run_is_clean(tmp_path, measured, where):
    out = tmp_path / "cal.yaml"
    args = ["calibrate", str(measured), "--base", "sm_90", "-o", str(out)]
    assert teg_cli(args)[0] == 0
    good = out.read_bytes()
    run_killed(where, 1, args)                        # data written, not yet made durable / renamed
    assert out.read_bytes() == good and machine_mod.load(out).name == "cal"
    assert len(leftovers(tmp_path)) == 1
    code, output = teg_cli(args)
    assert code == 0, output
    assert leftovers(tmp_path) == [] and out.read_bytes() == good


def test_killed_cache_conversion_is_removed_by_the_next_use(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("TEG_CACHE_DIR", str(cache))
    run_killed("teg.trace.native:ColumnWriter.append", 2, ["trace", "info", str(VECTORADD)])
    (partial,) = [p for p in cache.iterdir() if p.name != "digests"]       # (digests: the content-digest memo)
    assert ".partial-" in partial.name
    code, listing = teg_cli(["trace", "cache", "--json"])
    assert sorted(e["state"] for e in json.loads(listing)["entries"]) == ["digests", "stale"]
    assert teg_cli(["trace", "info", str(VECTORADD)])[0] == 0
    (entry,) = [p for p in cache.iterdir() if p.name != "digests"]         # the partial is gone
    doc = json.loads(teg_cli(["trace", "cache", "--json"])[1])
    assert sorted((e["state"], e["kernels"]) for e in doc["entries"]) == [("digests", 0), ("trace", 1)]
    assert doc["bytes"] == sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) > 0
    cleared = json.loads(teg_cli(["trace", "cache", "--clear", "--json"])[1])
    assert cleared["freed_bytes"] == doc["bytes"] and list(cache.iterdir()) == []


def test_cache_clear_keeps_a_running_conversion(tmp_path, monkeypatch):
    monkeypatch.setenv("TEG_CACHE_DIR", str(tmp_path))
    key = "t-" + "ab" * 16
    running = tmp_path / f".{key}.partial-{os.getpid()}-01234567"
    running.mkdir()
    killed = tmp_path / f".{key}.partial-{dead_pid()}-89abcdef"
    killed.mkdir()
    (tmp_path / "junk").write_text("x")                     # not teg's: listed, never removed
    res = CliRunner().invoke(main, ["trace", "cache", "--clear"])
    assert res.exit_code == 0 and "removed 1 entry" in res.output, res.output
    assert "kept 1 conversion(s) still running, 1 item(s) teg did not write" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([running.name, "junk"])
    res = CliRunner().invoke(main, ["trace", "cache"])
    assert f"{tmp_path}: 2 entries" in res.output and "conversion in progress" in res.output
    assert "not teg's: --clear leaves it alone" in res.output


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# ---- full disk ----------------------------------------------------------------------------------------

def test_full_disk_during_conversion_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    out = tmp_path / "out.npz"
    tt.convert(VECTORADD, out)
    good = out.read_bytes()
    orig = codec.encode_frame
    calls = []

    def full(*args):                    # the disk fills after the kernel's rows frame
        calls.append(1)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return orig(*args)

    monkeypatch.setattr(codec, "encode_frame", full)
    res = CliRunner().invoke(main, ["trace", "convert", str(MATRIXMUL), str(out)])
    assert res.exit_code == 2
    assert res.output == (f"teg: error: {out}: cannot write: No space left on device "
                          "(nothing written; partial output removed)\n")
    assert out.read_bytes() == good and sorted(p.name for p in tmp_path.iterdir()) == ["out.npz"]


def test_full_disk_during_calibrate_is_one_line_and_keeps_the_table(tmp_path, measured, monkeypatch):
    from teg import fileio

    out = tmp_path / "cal.yaml"
    args = ["calibrate", str(measured), "-o", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 0
    good = out.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fileio.os, "fsync", full)
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2 and res.output.startswith(f"teg: error: {out}: cannot write: No space left on device")
    assert res.output.count("\n") == 1
    assert out.read_bytes() == good and sorted(p.name for p in tmp_path.iterdir()) == ["cal.yaml", "measured.json"]


def test_file_size_limit_of_the_kernel_is_one_line_error(tmp_path):
    """A real write failure from the OS (RLIMIT_FSIZE: EFBIG, like a full disk) in a child process."""
    import resource

    out = tmp_path / "out.npz"
    tt.convert(VECTORADD, out)            # also warms the numba cache the child reads
    good = out.read_bytes()

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2 << 10, 2 << 10))    # the compact trace takes 4.3 KB

    res = subprocess.run([sys.executable, "-c", "from teg.cli import main; main(prog_name='teg')", "trace", "convert",
                          str(MATRIXMUL), str(out)], capture_output=True, text=True, preexec_fn=limit, timeout=300)
    assert res.returncode == 2, res.stderr
    assert res.stderr == f"teg: error: {out}: cannot write: File too large (nothing written; partial output removed)\n"
    assert out.read_bytes() == good and sorted(p.name for p in tmp_path.iterdir()) == ["out.npz"]


# ---- a user's file is never overwritten ------------------------------------------------------------

def test_convert_never_overwrites_a_users_numpy_archive(tmp_path):
    user = tmp_path / "x.npz"
    np.savez(user, weights=np.arange(5))
    mine = user.read_bytes()
    res = CliRunner().invoke(main, ["trace", "convert", str(MATRIXMUL), str(user)])
    assert res.exit_code == 2
    assert res.output == f"teg: error: {user}: exists and was not written by teg; not overwriting it (--force overwrites it)\n"
    assert user.read_bytes() == mine
    res = CliRunner().invoke(main, ["trace", "convert", str(MATRIXMUL), str(user), "--force"])
    assert res.exit_code == 0 and zipfile.ZipFile(user).read("meta.json")
    again = CliRunner().invoke(main, ["trace", "convert", str(VECTORADD), str(user)])    # teg's own: replaced
    assert again.exit_code == 0 and tt.load(user).kernels[0].num_rows == 344


def test_validation_outputs_refuse_a_users_file_before_running(tmp_path):
    user = tmp_path / "results.json"
    user.write_text('{"my": "data"}')
    for cmd in (["validate", "predict"], ["validate", "measure"]):
        res = CliRunner().invoke(main, [*cmd, "-o", str(user)])
        assert res.exit_code == 2 and "exists and was not written by teg; not overwriting it" in res.output, res.output
    assert user.read_text() == '{"my": "data"}'


def test_calibrate_refuses_a_users_table_but_replaces_its_own(tmp_path, measured):
    user = tmp_path / "my.yaml"
    user.write_text("extends: sm_90\n")
    res = CliRunner().invoke(main, ["calibrate", str(measured), "-o", str(user)])
    assert res.exit_code == 2 and "not overwriting it (--force overwrites it)" in res.output
    assert user.read_text() == "extends: sm_90\n"
    assert CliRunner().invoke(main, ["calibrate", str(measured), "-o", str(user), "--force"]).exit_code == 0
    assert CliRunner().invoke(main, ["calibrate", str(measured), "-o", str(user)]).exit_code == 0


def test_output_under_a_file_is_one_line_error(tmp_path):
    (tmp_path / "file").write_text("x")
    res = CliRunner().invoke(main, ["trace", "convert", str(VECTORADD), str(tmp_path / "file" / "out.npz")])
    assert res.exit_code == 2 and res.output.startswith("teg: error: ") and "is not a folder" in res.output
    assert res.output.count("\n") == 1


# ---- a cut calibrated table does not load --------------------------------------------------------

def test_truncated_calibrated_table_never_loads(tmp_path, measured):
    out = tmp_path / "cal.yaml"
    assert CliRunner().invoke(main, ["calibrate", str(measured), "-o", str(out)]).exit_code == 0
    text = out.read_bytes()
    assert machine_mod.load(out).name == "cal"
    cuts = sorted(set(np.linspace(1, len(text) - 2, 28).astype(int)) |
                  {i + 1 for i, b in enumerate(text[:-1]) if b == ord("\n")})     # 28 cuts + every line end
    silent = []
    for n in cuts:
        cut = tmp_path / f"cut{n}.yaml"
        cut.write_bytes(text[:n])
        try:
            machine_mod.load(cut)
            silent.append(n)
        except machine_mod.MachineTableError as exc:
            assert str(exc).startswith(str(cut)) and "\n" not in str(exc)
    assert silent == []
    # the YAML of most cuts parses: the end line is what catches them
    ends = [n for n in cuts if text[:n].count(b"\n") > 2 and text[n - 1] == ord("\n")]
    with pytest.raises(machine_mod.MachineTableError, match="truncated: this table was written by teg calibrate"):
        machine_mod.load(_write(tmp_path / "end.yaml", text[:ends[len(ends) // 2]]))


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_report_plots_replace_their_own_pngs_never_a_users(tmp_path):
    pytest.importorskip("matplotlib")
    data = Path(__file__).parent / "data" / "validation"
    args = ["validate", "report", str(data / "sample_measured.json"), "-p", str(data / "sample_predicted.json"),
            "--plots"]
    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "pred_vs_measured.png").write_bytes(b"\x89PNG....tEXtSoftware\x00teg 0.0")   # an earlier report's
    res = CliRunner().invoke(main, [*args, str(plots)])
    assert res.exit_code == 0, res.output
    assert (plots / "pred_vs_measured.png").stat().st_size > 1000 and leftovers(plots) == []
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "pred_vs_measured.png").write_bytes(b"\x89PNG my own figure")
    res = CliRunner().invoke(main, [*args, str(mine)])
    assert res.exit_code == 2 and "pred_vs_measured.png: exists and was not written by teg" in res.output
    assert (mine / "pred_vs_measured.png").read_bytes() == b"\x89PNG my own figure"


def test_one_output_name_can_change_format(tmp_path):
    """teg's own outputs replace each other whatever their format: native folder → Accel-Sim folder
    → native folder."""
    out = tmp_path / "t"
    tt.convert(VECTORADD, out)
    tt.convert(out, tmp_path / "native.npz")
    tt.convert(tmp_path / "native.npz", out)                # Accel-Sim text over the native folder
    assert (out / "kernelslist.g").is_file() and not (out / "meta.json").exists()
    tt.convert(VECTORADD, out)                              # and a native trace over the Accel-Sim folder
    assert (out / "meta.json").is_file() and leftovers(tmp_path) == []
