"""``teg estimate`` / ``teg whatif`` / ``teg sweep`` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from teg.cli import main

FIX = Path(__file__).parent / "fixtures" / "sass"


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_estimate_without_arguments_runs_the_bundled_example():
    r = invoke("estimate")
    assert r.exit_code == 0, r.output
    assert "matmul_abt" in r.output and "bank_conflict" in r.output and "cycles" in r.output


def test_estimate_json():
    r = invoke("estimate", "--json")
    d = json.loads(r.output)
    assert d["cycles"] == sum(d["stalls"].values())
    assert d["machine"] == "sm_90" and d["occupancy"]["blocks_per_sm"] >= 1


def test_whatif_json_first_row_is_baseline():
    d = json.loads(invoke("whatif", "--json").output)
    assert d[0]["mechanism"] == "baseline"
    assert {"mechanism", "cycles"} <= set(d[0])
    assert [x["mechanism"] for x in d][-1] == "all"


def test_sweep_csv_and_json():
    r = invoke("sweep", "--warps", "1,2", "--csv")
    lines = r.output.strip().splitlines()
    assert lines[0].startswith("warps,") and len(lines) == 3
    d = json.loads(invoke("sweep", "--blocks-per-sm", "1,2", "--json").output)
    assert [x["blocks"] for x in d] == [1, 2]


def test_text_views_state_the_simulated_setup():
    """estimate, whatif and sweep print what was simulated above their tables: the bundled example's
    grid has 4 blocks of 8 warps: by default every SM is simulated and the 4 blocks go one to each
    of 4 SMs; sampling one SM (--sms 1) gives it 1 block and 1/4 of the bandwidth; a sweep assumes
    every SM of the machine (sm_90 table: 114) runs the same configuration."""
    est = invoke("estimate").output
    assert ("simulated   every SM (114), 32 warps in 4 blocks, blocks dealt as the hardware deals them; "
            "2 L2 partitions and the DRAM shared by all") in est
    assert "blocks      4 on 4 of 114 SMs, 1 per SM, 0.00439 waves" in est
    one = invoke("estimate", "--sms", "1").output
    assert "simulated   1 SM, 8 warps in 1 block, with 1/4 of the DRAM bandwidth and L2 (4 SMs busy)" in one
    wi = invoke("whatif", "--sms", "1").output
    # the sm_90 table's scheduler_policy (greedy-then-oldest) when --policy names none
    assert wi.startswith("kernel      matmul_abt\nmachine     sm_90  (controlcodes dependencies, gto scheduling)")
    assert "(controlcodes dependencies, gty scheduling)" in invoke("whatif", "--sms", "1", "--policy", "gty").output
    assert "1/4 of the DRAM bandwidth" in wi and "mechanism" in wi
    sw = invoke("sweep", "--warps", "1,2").output
    assert "simulated   1 SM, with 1/114 of the DRAM bandwidth and L2 (114 SMs busy)" in sw
    assert "all of the DRAM bandwidth" in invoke("estimate", "--sms", "4").output
    # machine-readable views stay bare
    assert invoke("sweep", "--warps", "1,2", "--csv").output.startswith("warps,")


def test_estimate_gt200_listing3():
    r = invoke("estimate", "--sass", str(FIX / "teg_listing3.sass"), "--kernel", "fadd_latency")
    assert r.exit_code == 0, r.output
    assert "gt200" in r.output


def test_user_errors_are_one_line():
    r = CliRunner().invoke(main, ["estimate", "--sass", str(FIX / "kernels.sm_90.sass"), "--kernel", "matmul_abt"])
    assert r.exit_code == 2
    assert r.output.startswith("teg: error:") and "needs a trace" in r.output
    r = CliRunner().invoke(main, ["sweep", "--warps", "0"])
    assert r.exit_code != 0


def test_unknown_opcodes_are_an_error_or_timed_as_alu_with_exit_1(tmp_path):
    """An opcode the table does not know stops the estimate (exit 2) unless the user asks to time
    it as integer ALU; then the estimate is printed with a warning and the run exits 1, never 0."""
    from click.testing import CliRunner

    from teg.cli import main

    text = ("-kernel name = k\n-grid dim = (1,1,1)\n-block dim = (32,1,1)\n-shmem = 0\n-nregs = 8\n"
            "-binary version = 90\n"
            "-accelsim tracer version = 4\n\n#traces format\n\n#BEGIN_TB\n\nthread block = 0,0,0\n\n"
            "warp = 0\ninsts = 2\n0000 ffffffff 0 FROBNICATE 0 0\n0010 ffffffff 0 EXIT 0 0\n\n#END_TB\n")
    path = tmp_path / "kernel-1.traceg"
    path.write_text(text)
    res = CliRunner().invoke(main, ["estimate", "--trace", str(path)])
    assert res.exit_code == 2 and "FROBNICATE" in res.stderr and res.stderr.startswith("teg: error:")
    res = CliRunner().invoke(main, ["estimate", "--trace", str(path), "--unknown", "alu"])
    assert res.exit_code == 1
    assert "cycles" in res.stdout and "FROBNICATE" in res.stderr
