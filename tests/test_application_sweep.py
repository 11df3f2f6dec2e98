"""Sweeps over applications (teg/analysis/sweepspec.py, teg/analysis/rowlog.py, ``teg sweep --spec``):
the YAML file and its errors, failing points recorded, resuming after an interruption, Parquet."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from teg.analysis.sweepspec import COLUMNS, KEY_COLUMNS, SweepSpecError, load_spec, points, run_point
from teg.cli import main
from teg.analysis.rowlog import RowLog, RowLogError

TORCH = Path(__file__).parent / "data" / "traces" / "dp-performance-accel-sim" / "simpletorch"

SPEC = f"""\
traces:
  - {TORCH}
kernels: "re:reduce"
machines: [auto, gt200]
warps: [auto, 2]
whatif: [none, bank_conflicts]
"""


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def spec_file(tmp_path, text=SPEC, name="sweep.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def read_rows(path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def by_key(rows) -> dict:
    return {tuple(r[c] for c in KEY_COLUMNS): r for r in rows}


# ---- the file -------------------------------------------------------------------------------------

def test_spec_points_are_the_product_of_its_lists(tmp_path):
    spec = load_spec(spec_file(tmp_path))
    pts, apps = points(spec)
    assert len(pts) == 2 * 2 * 2 * 2                        # kernels 5, 87 x machines x warps x what-ifs
    assert {p.ref.kernel_id for p in pts} == {5, 87} and apps[0][1].missing == []
    assert {(p.machine, p.warps, p.whatif) for p in pts} == {(m, w, x) for m in ("auto", "gt200")
                                                             for w in (None, 2) for x in ("none", "bank_conflicts")}
    assert len({p.key for p in pts}) == len({p.point() for p in pts}) == len(pts)


@pytest.mark.parametrize("text, line, message", [
    ("traces: [x]\nmachnies: [sm_70]\n", 2, "machnies: unknown key"),
    (f"traces: [{TORCH}]\nwarps: [auto,\n  0]\n", 3, "warps: 0: expected auto or a positive warp count"),
    (f"traces: [{TORCH}]\nwhatif:\n  - none\n  - bank_conflict\n", 4, "unknown mechanism 'bank_conflict'"),
    (f"traces: [{TORCH}]\nmachines: [sm_70, sm_9000]\n", 2, "machines:"),
    ("traces:\n  - does/not/exist\n", 2, "does/not/exist: no such file or folder"),
    (f"traces: [{TORCH}]\noptions: {{policy: fifo}}\n", 2, "options: policy 'fifo'"),
    ("traces: [a\n", 2, "invalid YAML"),
    (f"traces: [{TORCH}]\nwarps: &w [1, 2]\nblocks: *w\n", 2, "anchor"),
    (f"traces: [{TORCH}]\nwarps: [1]\nwarps: [2]\n", 3, "duplicate"),
])
def test_spec_errors_name_the_file_and_line(tmp_path, text, line, message):
    p = spec_file(tmp_path, text)
    with pytest.raises(SweepSpecError) as exc:
        load_spec(p)
    assert str(exc.value).startswith(f"{p}:{line}:") and message in str(exc.value)


def test_spec_error_on_the_command_line_is_one_line_exit_2(tmp_path):
    r = invoke("sweep", "--spec", spec_file(tmp_path, "traces: [x]\nbogus: 1\n"))
    assert r.exit_code == 2 and r.output.startswith("teg: error:") and len(r.output.splitlines()) == 1


# ---- one point ------------------------------------------------------------------------------------

def test_a_whatif_point_is_the_whatif_row_of_its_mechanism(tmp_path):
    """The point removing the L1 misses reports what ``teg whatif`` reports for that mechanism."""
    from teg.analysis.whatif import whatif
    from teg.engine import load_inputs, lower
    from teg.engine.options import Options

    spec = load_spec(spec_file(tmp_path, f"traces: [{TORCH}]\nkernels: '87'\nwhatif: [l1_misses]\n"))
    (pt,) = points(spec)[0]
    row = run_point(pt)
    f = load_inputs(trace=TORCH, kernel="87")
    base, wi, _ = whatif(lower(None, f.kernel_trace, f.machine, Options()), ("l1_misses",))
    assert row.status == "ok" and row.error is None
    assert (row.cycles, row.baseline_cycles, row.schedule) == (wi.cycles, base.cycles, wi.schedule)
    assert row.cycles < row.baseline_cycles


def test_a_failing_point_is_recorded_and_the_others_run(tmp_path):
    out = tmp_path / "r.csv"
    r = invoke("sweep", "--spec", spec_file(tmp_path), "-o", out, "--jobs", 1)
    assert r.exit_code == 1 and "16 points, 16 run now, 0 already in" in r.output and "8 failed" in r.output
    rows = read_rows(out)
    assert list(rows[0]) == list(COLUMNS) and len(rows) == 16
    for row in rows:
        if row["machine"] == "gt200":           # the GTX 280 table knows no Volta opcode
            assert row["status"] == "error" and "machine table gt200 does not know" in row["error"]
            assert row["cycles"] == ""
        else:
            assert row["status"] == "ok" and row["error"] == "" and int(row["cycles"]) > 0
            assert row["machine_table"] == "sm_70"


def test_a_resumed_sweep_equals_an_uninterrupted_one(tmp_path):
    whole, cut = tmp_path / "whole.csv", tmp_path / "cut.csv"
    spec = spec_file(tmp_path)
    invoke("sweep", "--spec", spec, "-o", whole, "--jobs", 1)
    text = whole.read_text()
    lines = text.splitlines(keepends=True)
    cut.write_text("".join(lines[:6]) + lines[6][:25])        # a crash in the middle of the sixth row
    r = invoke("sweep", "--spec", spec, "-o", cut, "--jobs", 1)
    assert "cut off a partial last line (25 bytes)" in r.output
    assert "16 points, 11 run now, 5 already in" in r.output
    assert by_key(read_rows(cut)) == by_key(read_rows(whole)) and len(read_rows(cut)) == 16
    r = invoke("sweep", "--spec", spec, "-o", cut, "--jobs", 1)
    assert "0 run now, 16 already in" in r.output and len(read_rows(cut)) == 16
    r = invoke("sweep", "--spec", spec, "-o", cut, "--jobs", 1, "--retry-failed")
    assert "8 run now" in r.output and len(read_rows(cut)) == 24          # appended; the later row counts
    assert by_key(read_rows(cut)) == by_key(read_rows(whole))


def test_parquet_beside_the_csv_holds_the_latest_row_of_each_point(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "r.csv"
    invoke("sweep", "--spec", spec_file(tmp_path), "-o", out, "--jobs", 1)
    invoke("sweep", "--spec", spec_file(tmp_path), "-o", out, "--jobs", 1, "--retry-failed")
    table = pq.read_table(tmp_path / "r.parquet")
    assert table.num_rows == 16 and str(table.schema.field("cycles").type) == "int64"
    ok = [c for c, s in zip(table.column("cycles").to_pylist(), table.column("status").to_pylist()) if s == "ok"]
    assert sorted(ok) == sorted(int(r["cycles"]) for r in read_rows(out) if r["status"] == "ok")


def test_application_sweep_without_a_file_prints_the_points():
    r = invoke("sweep", "--trace", TORCH, "--kernel", "re:reduce", "--warps", "1,2", "--jobs", 1, "--csv")
    assert r.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(r.output)))
    assert [(r["kernel_id"], r["warps"]) for r in rows] == [("5", "1"), ("5", "2"), ("87", "1"), ("87", "2")]
    assert all(r["status"] == "ok" for r in rows)
    r = invoke("sweep", "--spec", "x.yaml", "--trace", TORCH)
    assert r.exit_code == 2 and "leave out --trace" in r.output


# ---- the results file -----------------------------------------------------------------------------

def test_rowlog_refuses_another_table_and_keeps_the_latest_row(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(RowLogError, match=r"t.csv:1: its columns"):
        RowLog(p, ("k", "v"), ("k",)).open()
    q = tmp_path / "u.csv"
    with RowLog(q, ("k", "v"), ("k",)) as log:
        log.append({"k": 1, "v": "x,y"})
        log.append({"k": 1, "v": None})
    assert q.read_text() == 'k,v\n1,"x,y"\n1,\n'
    with RowLog(q, ("k", "v"), ("k",)) as log:
        assert log.rows == {("1",): {"k": "1", "v": ""}} and log.dropped == 0


def test_run_spec_resumes_from_its_table_without_the_command_line(tmp_path):
    """The library runs a sweep and keeps its table (teg/analysis/sweepspec.py run_spec): a second
    run of the same spec runs nothing (retrying failed points re-runs none when none failed) and
    returns the same rows; without a table every point runs and nothing is written."""
    from teg.analysis.executors import Executor
    from teg.analysis.sweepspec import SweepSpec, run_spec

    spec = SweepSpec.of_application(TORCH, kernels="87", warps=[1, 2])
    out = tmp_path / "s.csv"
    first = run_spec(spec, Executor(jobs=1), output=out)
    assert (first.ran, first.already, first.failed, first.complete) == (2, 0, 0, True)
    assert first.wrote[0] == str(out) and [r.warps for r in first.rows] == ["1", "2"]
    again = run_spec(spec, Executor(jobs=1), output=out, retry_failed=True)
    assert (again.ran, again.already) == (0, 2) and again.rows == first.rows
    plain = run_spec(spec, Executor(jobs=1))
    assert plain.ran == 2 and plain.wrote == []
    # the rows read back from the table are the rows the points gave, typed alike
    assert plain.rows == first.rows and isinstance(first.rows[0].cycles, int) and first.rows[0].top_stall


def test_a_point_row_is_the_table_line_and_reads_back_from_it():
    """PointRow declares the table once: its fields are the columns in order, the Parquet types come
    from it, and a row written as CSV text reads back equal (None stays None, "" stays "")."""
    from teg.analysis.sweepspec import FLOAT_COLUMNS, INT_COLUMNS, POINT_COLUMNS, PointRow

    assert COLUMNS[0] == "key" and POINT_COLUMNS == ("trace", "sass", "kernel_id", "position", "machine", "warps",
                                                     "whatif")
    assert set(INT_COLUMNS) == {"kernel_id", "position", "cycles", "baseline_cycles", "instructions",
                                "top_stall_cycles"} and set(FLOAT_COLUMNS) == {"time_us", "ipc"}
    ok = PointRow("k", "t", "", "5", "2", "auto", "8", "none", "kern", "1x1x1", "8x1x1", machine_table="sm_70",
                  status="ok", cycles=10, baseline_cycles=12, time_us=0.5, instructions=3, ipc=0.3,
                  top_stall="dep_global", top_stall_cycles=4, schedule="free")
    failed = PointRow("k2", "t", "", "6", "3", "gt200", "auto", "all", "kern", "1x1x1", "8x1x1",
                      error="no such opcode", warnings="w")
    for row in (ok, failed):
        cells = {c: "" if v is None else str(v) for c, v in row.data().items()}
        assert list(cells) == list(COLUMNS) and PointRow.from_cells(cells) == row
