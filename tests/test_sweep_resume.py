"""A resumed sweep runs the experiment its spec describes (issue 37, points 1, 3 and the sweep
items of 15): the resume key holds the trace and SASS content, the machine table's content after
``extends:``, the options, the what-if and teg's version, and the CSV says which key each row
had; a changed spec re-runs exactly the points it changed; ``-o`` never changes a file that is not
this sweep's table, never replaces the CSV with Parquet, never overwrites a user's Parquet; two
sweeps on one CSV do not double it (a real second process, refused while the first holds it)."""

from __future__ import annotations

import csv
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from procs import env_with, finish, paused_proc, release, teg_proc, wait_for
from teg.cli import main

HERE = Path(__file__).parent
TORCH = HERE / "data" / "traces" / "dp-performance-accel-sim" / "simpletorch"
BUNDLED = HERE.parent / "traces" / "matmul_abt.sm_90.trace.npz"
BUNDLED_SASS = HERE.parent / "traces" / "matmul_abt.sm_90.sass"

SPEC = f"traces: [{TORCH}]\nkernels: 're:reduce'\nmachines: [auto]\nwarps: [auto, 2]\n"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def rows_of(path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def results(rows) -> dict:
    """(point cells) → result cells, for comparing two tables."""
    point = ("trace", "sass", "kernel_id", "position", "machine", "warps", "whatif")
    return {tuple(r[c] for c in point): (r["status"], r["cycles"], r["time_us"], r["machine_table"]) for r in rows}


def latest(path, keys) -> list[dict]:
    """The latest row of each experiment ``keys`` names (the table keeps the rows of older keys)."""
    by_key = {}
    for r in rows_of(path):
        by_key[r["key"]] = r
    return [by_key[k] for k in keys]


def sweep(spec: Path, out: Path, *extra):
    return invoke("sweep", "--spec", spec, "-o", out, "--jobs", 1, *extra)


# ---- point 1: the key is the experiment -----------------------------------------------------------

def test_added_options_rerun_every_point_and_match_a_fresh_run(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "r.csv"
    assert sweep(spec, out).exit_code == 0
    spec.write_text(SPEC + "options: {policy: lrr, sms: 1}\n")
    r = sweep(spec, out)
    assert r.exit_code == 0 and "4 points, 4 run now, 0 already in" in r.output, r.output
    fresh = tmp_path / "fresh.csv"
    assert sweep(spec, fresh).exit_code == 0
    now = {k: v for k, v in results(rows_of(out)[-4:]).items()}
    assert now == results(rows_of(fresh))
    assert len({r["key"] for r in rows_of(out)}) == 8            # each row says which experiment it was
    assert "0 run now" in sweep(spec, out).output


def test_a_changed_user_table_reruns_its_points_only(tmp_path):
    table = tmp_path / "mine.yaml"
    table.write_text("name: mine\nextends: sm_70\nclock_mhz: {value: 1530, source: test}\n")
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC.replace("machines: [auto]", "machines: [auto, mine.yaml]"))
    out = tmp_path / "r.csv"
    assert sweep(spec, out).exit_code == 0
    before = {r["kernel_id"] + r["machine"] + r["warps"]: r for r in rows_of(out)}
    table.write_text("name: mine\nextends: sm_70\nclock_mhz: {value: 500, source: test}\n")
    r = sweep(spec, out)
    assert "8 points, 4 run now, 4 already in" in r.output, r.output
    fresh = tmp_path / "fresh.csv"
    sweep(spec, fresh)
    keys = [r["key"] for r in rows_of(fresh)]
    assert results(latest(out, keys)) == results(rows_of(fresh))
    for row in latest(out, keys):
        b = before[row["kernel_id"] + row["machine"] + row["warps"]]
        if row["machine"] == "auto":
            assert row["key"] == b["key"]
        else:                              # a slower clock: more time (the stale row kept the old one)
            assert row["key"] != b["key"] and float(row["time_us"]) > 2.5 * float(b["time_us"])


def test_the_same_trace_with_and_without_sass_are_two_experiments(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(f"traces:\n  - {BUNDLED}\n  - {{trace: {BUNDLED}, sass: {BUNDLED_SASS}}}\nmachines: [sm_90]\n")
    out = tmp_path / "r.csv"
    r = sweep(spec, out)
    assert r.exit_code == 0 and "2 points, 2 run now" in r.output, r.output
    rows = rows_of(out)
    assert [row["sass"] for row in rows] == ["", str(BUNDLED_SASS)] and rows[0]["key"] != rows[1]["key"]
    assert rows[0]["status"] == rows[1]["status"] == "ok"
    assert "2 points, 0 run now, 2 already in" in sweep(spec, out).output


def test_a_changed_kernel_file_reruns_that_kernels_points(tmp_path):
    app = tmp_path / "app"
    shutil.copytree(TORCH, app)
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC.replace(str(TORCH), "app"))
    out = tmp_path / "r.csv"
    assert sweep(spec, out).exit_code == 0
    k = app / "kernel-87.traceg"
    text = k.read_bytes()
    st = k.stat()
    k.write_bytes(text.replace(b"-cuda stream id = 0", b"-cuda stream id = 0 "))    # the same size would do too
    import os

    os.utime(k, ns=(st.st_atime_ns, st.st_mtime_ns))
    r = sweep(spec, out)
    assert "4 points, 2 run now, 2 already in" in r.output, r.output
    assert {row["kernel_id"] for row in rows_of(out)[-2:]} == {"87"}


# ---- point 3: -o never destroys a file ----------------------------------------------------------------

@pytest.mark.parametrize("name, content", [
    ("notes.txt", b"my notes\nlast line without a newline"),
    ("weights.npz", None),
    ("s.yaml", None),                     # the spec given as its own -o
])
def test_output_that_is_not_this_sweeps_table_is_left_unchanged(tmp_path, name, content):
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    target = tmp_path / name
    if name.endswith(".npz"):
        np.savez(target, w=np.arange(1000))
    elif content is not None:
        target.write_bytes(content)
    before = target.read_bytes()
    r = sweep(spec, target)
    assert r.exit_code == 2 and r.output.startswith("teg: error:") and r.output.count("\n") == 1, r.output
    assert "are not this sweep's" in r.output and "nothing in it was changed" in r.output
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"s.yaml", name})


def test_parquet_output_name_is_refused_and_a_users_parquet_is_kept(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    r = sweep(spec, tmp_path / "x.parquet")
    assert r.exit_code == 2 and "give a name ending in .csv" in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]
    mine = tmp_path / "results.parquet"
    pq.write_table(pa.table({"mine": [1, 2, 3]}), mine)
    before = mine.read_bytes()
    t0 = time.monotonic()
    r = sweep(spec, tmp_path / "results.csv")
    assert r.exit_code == 2 and "results.parquet: exists and was not written by teg" in r.output
    assert time.monotonic() - t0 < 10 and not (tmp_path / "results.csv").exists()     # refused before running
    assert mine.read_bytes() == before
    assert sweep(spec, tmp_path / "results.csv", "--force").exit_code == 0
    assert pq.read_table(mine).num_rows == 4
    assert sweep(spec, tmp_path / "results.csv").exit_code == 0                       # teg's own: replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv", "results.parquet", "s.yaml"]


def test_output_on_a_pipe_or_device_is_refused_without_waiting(tmp_path):
    import os

    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    fifo = tmp_path / "p.csv"
    os.mkfifo(fifo)
    code, out, err = finish(teg_proc(["sweep", "--spec", spec, "-o", fifo, "--jobs", 1]), timeout=60)
    assert code == 2 and "is a pipe; a results table is read back" in err, err
    r = sweep(spec, "/dev/null")
    assert r.exit_code == 2 and "is a character device" in r.output


# ---- point 15: two sweeps on one CSV, spec values --------------------------------------------------

def test_two_sweeps_on_one_csv_do_not_double_it(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    out, sig = tmp_path / "r.csv", tmp_path / "sig"
    sig.mkdir()
    a = paused_proc("teg.analysis.sweepspec:run_point", 2, sig, "a",
                    ["sweep", "--spec", spec, "-o", out, "--jobs", 1], env_with())
    wait_for(sig / "a.at", a)                                 # A holds the table, one point written
    code, o, err = finish(teg_proc(["sweep", "--spec", spec, "-o", out, "--jobs", 1]), timeout=120)
    assert code == 2 and "another teg sweep is writing this table" in err, (o, err)
    release(sig, "a")
    code, o, err = finish(a)
    assert code == 0, err
    rows = rows_of(out)
    assert len(rows) == 4 and len({r["key"] for r in rows}) == 4
    assert "0 run now, 4 already in" in sweep(spec, out).output


@pytest.mark.parametrize("text, line, message", [
    ("kernels: {a: 1}\n", 2, "kernels: {'a': 1}: expected a selection"),
    ("kernels: [re:x, 2]\n", 2, "kernels:"),
    ("kernels: true\n", 2, "kernels: True"),
    ("machines: [[sm_70]]\n", 2, "machines: ['sm_70']: expected a machine table name"),
    ("machines: [sm_70, 7]\n", 2, "machines: 7: expected a machine table name"),
    ("traces:\n  - {trace: x, sass: [a]}\n", 3, "expected a path, or {trace: PATH, sass: PATH}"),
])
def test_spec_values_of_the_wrong_type_are_errors(tmp_path, text, line, message):
    from teg.analysis.sweepspec import SweepSpecError, load_spec

    p = tmp_path / "s.yaml"
    p.write_text((f"traces: [{TORCH}]\n" if not text.startswith("traces") else "") + text)
    with pytest.raises(SweepSpecError) as exc:
        load_spec(p)
    assert message in str(exc.value) and str(exc.value).startswith(f"{p}:"), str(exc.value)


def test_a_list_of_kernel_ids_selects_them(tmp_path):
    from teg.analysis.sweepspec import load_spec, points

    p = tmp_path / "s.yaml"
    p.write_text(f"traces: [{TORCH}]\nkernels: [5, 87]\n")
    assert sorted({pt.ref.kernel_id for pt in points(load_spec(p))[0]}) == [5, 87]
