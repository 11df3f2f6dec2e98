"""One output rule for everything teg writes (issue 37, points 4, 5 and the output items of 12
and 15): timelines and plots are atomic, ownership-checked and take --force; devices and pipes
are written in place or refused, never replaced, with or without --force (and a refusal never
recommends --force for them); --force never writes through a link into another format; output
names up to the file system's limit are writable; temporaries of killed runs (Parquet included)
are removed by the next run."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from procs import finish, teg_proc
from teg.cli import main

DATA = Path(__file__).parent / "data" / "traces"
VECTORADD = DATA / "microgpusim" / "vectoradd-100-32-trace"
TORCH = DATA / "dp-performance-accel-sim" / "simpletorch"


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".partial-" in p.name or ".old-" in p.name)


def one_error(res, *needles):
    assert res.exit_code == 2, res.output
    assert res.output.startswith("teg: error:") and res.output.count("\n") == 1, res.output
    for n in needles:
        assert n in res.output, res.output


# ---- point 4: --timeline and --plot -------------------------------------------------------------------

def test_timeline_never_overwrites_a_users_file_nor_follows_a_link_into_it(tmp_path):
    mine = tmp_path / "notes.json"
    mine.write_text('{"my": "notes"}')
    link = tmp_path / "link.json"
    link.symlink_to(mine.name)
    for target in (mine, link):
        one_error(cli("estimate", "--timeline", target), "exists and was not written by teg", "--force overwrites it")
    assert mine.read_text() == '{"my": "notes"}' and link.is_symlink()
    out = tmp_path / "t.json"
    assert cli("estimate", "--timeline", out).exit_code == 0
    first = json.loads(out.read_text())
    assert first["otherData"]["generator"] == "teg estimate --timeline" and first["traceEvents"]
    assert cli("estimate", "--timeline", out, "--timeline-cycles", "0:500").exit_code == 0    # teg's own: replaced
    assert json.loads(out.read_text())["otherData"]["window"] == [0, 500]
    assert cli("estimate", "--timeline", mine, "--force").exit_code == 0
    assert json.loads(mine.read_text())["traceEvents"] and leftovers(tmp_path) == []


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_never_overwrites_a_users_figure(tmp_path, suffix):
    pytest.importorskip("matplotlib")
    mine = tmp_path / f"fig{suffix}"
    mine.write_bytes(b"\x89PNG my own figure" if suffix == ".png" else b"<?xml version='1.0'?><svg>mine</svg>")
    before = mine.read_bytes()
    for args in (["estimate"], ["whatif"], ["sweep", "--warps", "1,2"]):
        one_error(cli(*args, "--plot", mine), "exists and was not written by teg")
    assert mine.read_bytes() == before
    out = tmp_path / f"teg{suffix}"
    assert cli("estimate", "--plot", out).exit_code == 0
    assert cli("whatif", "--plot", out).exit_code == 0                 # replaces teg's own figure
    assert cli("estimate", "--plot", mine, "--force").exit_code == 0 and mine.read_bytes() != before
    assert leftovers(tmp_path) == []


def test_a_killed_timeline_write_keeps_the_previous_file(tmp_path):
    from test_output_safety import run_killed

    out = tmp_path / "t.json"
    assert cli("estimate", "--timeline", out).exit_code == 0
    good = out.read_bytes()
    run_killed("os:replace", 1, ["estimate", "--timeline", str(out), "--timeline-cycles", "0:100"])
    assert out.read_bytes() == good and len(leftovers(tmp_path)) == 1
    assert cli("estimate", "--timeline", out, "--timeline-cycles", "0:100").exit_code == 0
    assert leftovers(tmp_path) == []


# ---- point 5: devices ----------------------------------------------------------------------------------

def _char_device(path: Path) -> bool:
    """A copy of /dev/null's node at ``path`` (needs root), else False."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        return True
    except (PermissionError, OSError):
        return False


@pytest.mark.parametrize("force", [False, True])
def test_a_device_output_is_never_replaced(tmp_path, force):
    dev = tmp_path / "null"
    if not _char_device(dev):
        pytest.skip("mknod needs root")
    res = cli("trace", "convert", VECTORADD, dev, *(["--force"] if force else []))
    one_error(res, "is not a folder but a character device", "never replaces a character device")
    assert "(--force overwrites it)" not in res.output
    assert stat.S_ISCHR(os.lstat(dev).st_mode)                 # the node is still there, still a device
    assert cli("estimate", "--timeline", dev, *(["--force"] if force else [])).exit_code == 0   # in place
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_a_device_named_npz_is_written_in_place(tmp_path):
    dev = tmp_path / "out.npz"
    if not _char_device(dev):
        pytest.skip("mknod needs root")
    for src in (VECTORADD, Path(__file__).parents[1] / "traces" / "matmul_abt.sm_90.trace.npz"):
        res = cli("trace", "convert", src, dev)
        assert res.exit_code == 0 and res.exception is None, res.output
        assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_a_pipe_output_is_written_when_read_and_refused_when_not(tmp_path):
    fifo = tmp_path / "out.npz"
    os.mkfifo(fifo)
    code, out, err = finish(teg_proc(["trace", "convert", VECTORADD, fifo]), timeout=120)
    assert code == 2 and "is a pipe that nobody reads; nothing written" in err, err
    got = []
    proc = teg_proc(["trace", "convert", VECTORADD, fifo])

    def reader():
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    code, out, err = finish(proc, timeout=120)
    t.join(30)
    assert code == 0, err
    import io
    import zipfile

    assert "meta.json" in zipfile.ZipFile(io.BytesIO(got[0])).namelist()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    code, out, err = finish(teg_proc(["estimate", "--timeline", fifo]), timeout=120)     # no reader
    assert code == 2 and "nobody reads" in err, err


def test_a_block_device_or_socket_is_refused(tmp_path):
    import socket

    sock = tmp_path / "s.json"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(sock))
    try:
        one_error(cli("estimate", "--timeline", sock, "--force"), "is a socket", "never")
    finally:
        s.close()


# ---- point 15: links, long names, Parquet temporaries ------------------------------------------------

def test_force_never_writes_through_a_link_into_another_format(tmp_path):
    mine = tmp_path / "thesis.tex"
    mine.write_text("my thesis")
    link = tmp_path / "out"
    link.symlink_to(mine)
    one_error(cli("trace", "convert", VECTORADD, link, "--force"), "is a link to a file", "even with --force")
    assert mine.read_text() == "my thesis" and link.is_symlink()
    link2 = tmp_path / "t.json"
    link2.symlink_to(mine)
    one_error(cli("estimate", "--timeline", link2, "--force"), "a file of another format",
              "does not write through a link into another format")
    assert mine.read_text() == "my thesis"
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "keep").write_text("k")
    link3 = tmp_path / "x.npz"
    link3.symlink_to(folder)
    one_error(cli("trace", "convert", VECTORADD, link3, "--force"), "is a link to a folder")
    assert (folder / "keep").read_text() == "k"
    other = tmp_path / "other.json"                    # a link to a file of the same format: followed
    other.write_text("{}")
    link4 = tmp_path / "l4.json"
    link4.symlink_to(other)
    assert cli("estimate", "--timeline", link4, "--force").exit_code == 0 and link4.is_symlink()
    assert json.loads(other.read_text())["traceEvents"]


@pytest.mark.parametrize("length", [232, 240, 255])
def test_long_output_names_are_writable(tmp_path, length):
    name = "n" * (length - 4) + ".npz"
    out = tmp_path / name
    res = cli("trace", "convert", VECTORADD, out)
    assert res.exit_code == 0, res.output
    assert out.is_file() and leftovers(tmp_path) == []
    assert cli("trace", "convert", VECTORADD, out).exit_code == 0         # replaced, still no temporaries
    folder = tmp_path / ("d" * length)
    assert cli("trace", "convert", VECTORADD, folder).exit_code == 0 and (folder / "meta.json").is_file()
    assert cli("trace", "convert", VECTORADD, folder).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, folder.name])


def test_a_killed_parquet_write_leaves_nothing_after_the_next_run(tmp_path):
    pytest.importorskip("pyarrow")
    from test_output_safety import run_killed

    spec = tmp_path / "s.yaml"
    spec.write_text(f"traces: [{TORCH}]\nkernels: '87'\n")
    out = tmp_path / "r.csv"
    run_killed("pyarrow.parquet:write_table", 1, ["sweep", "--spec", str(spec), "-o", str(out), "--jobs", "1"])
    assert len(leftovers(tmp_path)) == 1                  # the killed run's partial Parquet file
    res = cli("sweep", "--spec", spec, "-o", out, "--jobs", 1)
    assert res.exit_code == 0 and "0 run now" in res.output, res.output
    assert leftovers(tmp_path) == [] and (tmp_path / "r.parquet").is_file()
