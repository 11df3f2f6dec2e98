"""Inputs that are not plain files, and damage confined to one kernel (issue 37, points 12 and 13):
a FIFO (or any non-regular file) at any input position is refused by name at once — never read,
so never a hang — with a message that says what it is; one kernel whose header cannot be read
is recorded as that kernel's failure while the application's other kernels are estimated."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from procs import finish, teg_proc
from teg.cli import main

ROOT = Path(__file__).parents[1]
TORCH = Path(__file__).parent / "data" / "traces" / "dp-performance-accel-sim" / "simpletorch"
SASS = ROOT / "traces" / "matmul_abt.sm_90.sass"
TRACE = ROOT / "traces" / "matmul_abt.sm_90.trace.npz"
CUBIN = ROOT / "tests" / "fixtures" / "emu" / "kernels.sm_90.cubin"
SAXPY = ["--kernel", "saxpy", "--block", "32", "--arg", "n=32", "--arg", "a=2.0", "--arg", "y=zeros:float32:32"]

# (argv with {f} for the FIFO, the FIFO's name, a phrase the one-line error must hold)
CASES = [
    (["estimate", "--trace", "{f}"], "t.npz", "is a pipe"),
    (["estimate", "--trace", "{f}"], "t.traceg", "is a pipe"),
    (["estimate", "--trace", "{f}"], "kernelslist.g", "is a pipe"),
    (["trace", "info", "{f}"], "t", "is a pipe"),
    (["trace", "convert", "{f}", "{d}/o.npz"], "t.traceg", "is a pipe"),
    (["estimate", "--sass", "{f}", "--trace", str(TRACE)], "k.sass", "not a regular file"),
    (["parse", "{f}"], "k.cubin", "not a regular file"),
    (["estimate", "--machine", "{f}"], "m.yaml", "is a pipe, not a machine table"),
    (["machines", "show", "{f}"], "m.yaml", "is a pipe, not a machine table"),
    (["sweep", "--spec", "{f}"], "s.yaml", "not a regular file"),
    (["sweep", "--warps", "1,2", "--plot", "{d}/p.png", "--measured", "{f}"], "m.csv", "not a regular file"),
    (["calibrate", "{f}", "-o", "{d}/c.yaml"], "m.json", "not a regular file"),
    (["validate", "report", "{f}"], "m.json", "not a regular file"),
    (["trace", "run", "{f}", *SAXPY, "--arg", "x=zeros:float32:32", "-o", "{d}/o.npz"], "k.cubin", "not a regular"),
    (["trace", "run", "{f}", *SAXPY, "--arg", "x=zeros:float32:32", "-o", "{d}/o.npz"], "k.cu", "not a regular"),
    (["trace", "run", str(CUBIN), *SAXPY, "--arg", "x={f}", "-o", "{d}/o.npz"], "x.npy", "not a regular file"),
    (["trace", "run", str(CUBIN), "--sass", "{f}", *SAXPY, "--arg", "x=zeros:float32:32", "-o", "{d}/o.npz"],
     "k.sass", "not a regular file"),
]


# every case in one child process (one start-up, not one per case), each under a 20 s alarm: a case
# that waits on its FIFO is reported as hung, and the child as a whole is bounded by a timeout
BATCH = r"""
import json, signal, sys
from click.testing import CliRunner
from teg.cli import main

class Hung(Exception):
    pass

def alarm(*a):
    raise Hung()

signal.signal(signal.SIGALRM, alarm)
out = []
for args in json.loads(sys.argv[1]):
    signal.alarm(20)
    try:
        r = CliRunner().invoke(main, args)
        hung = isinstance(r.exception, Hung)
        out.append({"exit": None if hung else r.exit_code, "stderr": "hung" if hung else r.stderr})
    except Hung:
        out.append({"exit": None, "stderr": "hung"})
    finally:
        signal.alarm(0)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def fifo_results(tmp_path_factory) -> list[tuple[dict, Path]]:
    import subprocess
    import sys

    runs, fifos = [], []
    for i, (argv, name, _) in enumerate(CASES):
        d = tmp_path_factory.mktemp(f"fifo{i}")
        fifo = d / ("app" if name == "kernelslist.g" else "") / name
        fifo.parent.mkdir(exist_ok=True)
        os.mkfifo(fifo)
        runs.append([a.replace("{f}", str(fifo)).replace("{d}", str(d)) for a in argv])
        fifos.append(fifo)
    res = subprocess.run([sys.executable, "-c", BATCH, json.dumps(runs)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return list(zip(json.loads(res.stdout.strip().splitlines()[-1]), fifos))


@pytest.mark.parametrize("k", range(len(CASES)), ids=[f"{c[0][0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_a_fifo_input_is_refused_at_once(fifo_results, k):
    got, fifo = fifo_results[k]
    lines = got["stderr"].strip().splitlines()
    assert got["exit"] == 2 and len(lines) == 1 and lines[0].startswith("teg: error:"), got
    assert CASES[k][2] in lines[0] and fifo.name in lines[0], lines[0]


def test_a_fifo_kernel_file_in_a_list_is_that_kernels_failure(tmp_path):
    app = tmp_path / "app"
    shutil.copytree(TORCH, app)
    (app / "kernel-4.traceg").unlink()
    os.mkfifo(app / "kernel-4.traceg")
    code, out, err = finish(teg_proc(["estimate", "--trace", app, "--jobs", "1", "--json"]), timeout=90)
    assert code == 1, err
    rows = {r["id"]: r for r in json.loads(out)["kernels"]}
    assert "is a pipe" in rows[4]["error"] and sum(r["error"] is None for r in rows.values()) == 5


@pytest.mark.parametrize("damage", [
    ("-grid dim = (1,1,1)", "-grid dim = (1,1"),
    ("-block dim = (8,1,1)", "-block dim = (0,1,1)"),
    ("-binary version = 70", "-binary version = seventy"),
])
def test_one_bad_kernel_header_fails_that_kernel_only(tmp_path, damage):
    app = tmp_path / "app"
    shutil.copytree(TORCH, app)
    k = app / "kernel-5.traceg"
    k.write_text(k.read_text().replace(*damage, 1))
    res = CliRunner().invoke(main, ["estimate", "--trace", str(app), "--jobs", "1", "--json"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    rows = {r["id"]: r for r in doc["kernels"]}
    assert len(rows) == 6 and sum(r["error"] is None for r in rows.values()) == 5
    assert str(k) in rows[5]["error"] and ":" in rows[5]["error"]
    res = CliRunner().invoke(main, ["estimate", "--trace", str(app), "--jobs", "1"])
    assert res.exit_code == 1 and "failed" in res.stdout and "kernel-5" in res.stdout + res.stderr
    res = CliRunner().invoke(main, ["sweep", "--trace", str(app), "--warps", "1", "--jobs", "1", "--csv"])
    import csv
    import io

    points = list(csv.DictReader(io.StringIO(res.stdout)))
    assert res.exit_code == 1 and [p["kernel_id"] for p in points if p["status"] == "error"] == ["5"]
