"""Plots (extra `plot`): written, non-empty, in the format the suffix names; bad measurement files
named by file and line; a clear message without matplotlib."""

from __future__ import annotations

import builtins

import pytest
from click.testing import CliRunner

from teg.engine.setup import RunSetup
from teg.analysis.sweep import SweepRow
from teg.analysis.whatif import WhatIfRow
from teg.cli import main
from teg.report import plots
from teg.report.plots import PlotError, read_measured

mpl = pytest.importorskip("matplotlib")

PNG = b"\x89PNG\r\n\x1a\n"


def rows():
    setup = RunSetup(kernel="k", machine="sm_90")
    return [SweepRow(warps=w, blocks=None, cycles=c, instructions=100 * w, throughput=100 * w / c,
                     speedup=(100 * w / c) / (100 / 500), setup=setup, stalls={"issue": i, "dep_fp32": c - i})
            for w, c, i in ((1, 500, 100), (2, 520, 200), (4, 600, 400))]


def written(path, magic=PNG):
    data = path.read_bytes()
    assert len(data) > 2000 and data.startswith(magic)
    return data


def test_sweep_plot_png_and_svg(tmp_path):
    written(plots.sweep_figure(rows(), tmp_path / "s.png", measured={1: 450.0, 4: 700.0}))
    svg = written(plots.sweep_figure(rows(), tmp_path / "s.svg"), magic=b"<?xml").decode()
    assert "dep_fp32" in svg and "speedup" in svg


def test_whatif_plot(tmp_path):
    def row(m, cycles):
        return WhatIfRow(mechanism=m, description=m, cycles=cycles, saved=1000 - cycles,
                         speedup=1000 / cycles, schedule="free")
    svg = written(plots.whatif_figure([row("baseline", 1000), row("bank_conflicts", 800), row("barriers", 1010),
                                       row("all", 400)], tmp_path / "w.svg"), magic=b"<?xml").decode()
    assert "bank_conflicts" in svg


def test_application_bars_and_stall_stack(tmp_path):
    app = [{"name": "gemm", "time_us": 12.0, "cycles": 20000, "stalls": {"issue": 5000, "cache_miss": 15000}},
           {"name": "reduce", "time_us": 3.0, "cycles": 5000, "stalls": {"issue": 4000, "barrier": 1000}},
           {"name": "broken", "error": "no such file"}]
    written(plots.application_bars(app, tmp_path / "a.png"))
    written(plots.application_bars([{"name": "k", "cycles": 10}], tmp_path / "b.png"))
    with pytest.raises(PlotError, match="no kernel ran"):
        plots.application_bars([{"name": "x", "error": "bad"}], tmp_path / "c.png")


def test_suffix_and_measurements(tmp_path):
    with pytest.raises(PlotError, match=r"x\.pdf: .*\.png or \.svg"):
        plots.sweep_figure(rows(), tmp_path / "x.pdf")
    good = tmp_path / "m.csv"
    good.write_text("warps,cycles,note\n1,450,a\n4, 700.5 ,b\n")
    assert read_measured(good) == {1: 450.0, 4: 700.5}
    bad = tmp_path / "bad.csv"
    bad.write_text("warps,cycles\n1,450\ntwo,600\n")
    with pytest.raises(PlotError, match=r"bad\.csv:3: expected a whole number of warps"):
        read_measured(bad)
    nohead = tmp_path / "nohead.csv"
    nohead.write_text("1,450\n")
    with pytest.raises(PlotError, match=r"nohead\.csv:1: expected a CSV header"):
        read_measured(nohead)


def test_without_matplotlib(monkeypatch):
    real = builtins.__import__

    def no_mpl(name, *a, **k):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    with pytest.raises(PlotError, match=r"pip install 'teg\[plot\]'"):
        plots._pyplot()


def test_cli_plots_of_the_bundled_example(tmp_path):
    runner = CliRunner()
    measured = tmp_path / "m.csv"
    measured.write_text("warps,cycles\n1,3000\n2,3100\n")
    res = runner.invoke(main, ["sweep", "--warps", "1,2", "--plot", str(tmp_path / "s.png"),
                               "--measured", str(measured)])
    assert res.exit_code == 0, res.output
    written(tmp_path / "s.png")
    res = runner.invoke(main, ["estimate", "--plot", str(tmp_path / "e.svg")])
    assert res.exit_code == 0, res.output
    assert "cache_miss" in written(tmp_path / "e.svg", magic=b"<?xml").decode()
    res = runner.invoke(main, ["sweep", "--warps", "1", "--measured", str(measured)])
    assert res.exit_code == 2 and "give --plot" in res.output
    res = runner.invoke(main, ["whatif", "--plot", str(tmp_path / "w.gif")])
    assert res.exit_code == 2 and "w.gif" in res.output
