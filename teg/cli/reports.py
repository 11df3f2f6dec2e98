"""The report options of ``teg estimate`` (``--view``, ``--timeline``, ``--timeline-cycles``,
``--plot``) and the ``--plot`` / ``--measured`` options of ``teg whatif`` and ``teg sweep``: their
click declarations and what they do with a run, kept apart from the commands (teg/cli/estimate.py).

Everything a user can get wrong (view names, the cycle window, a plot suffix, matplotlib missing)
is checked before the engine runs."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import click


def estimate_report_options(fn):
    """``--view``, ``--timeline``, ``--timeline-cycles`` and ``--plot`` of ``teg estimate``."""
    opts = [
        click.option("--view", "views", default="summary,stalls", show_default=True,
                     help="text views, comma-separated: summary, stalls, instructions (every static "
                          "instruction with its waits by cause and share of the stall cycles); --json carries all"),
        click.option("--timeline", "timeline_path", type=click.Path(dir_okay=False), default=None,
                     help="write the run's timeline as Chrome trace-event JSON (open it at ui.perfetto.dev: "
                          "Open trace file); 1 us of trace time = 1 cycle"),
        click.option("--timeline-cycles", default=None,
                     help="the cycles A:B the timeline covers (A: or :B for an open end; default: all)"),
        click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
                     help="draw the stall stack to FILE.png or FILE.svg (extra 'plot': matplotlib)"),
        FORCE,
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


FORCE = click.option("--force", is_flag=True, help="replace an output file (--timeline, --plot, -o) that teg did not "
                     "write (never a folder, a device or a pipe, and never through a link into another format)")


def plot_option(what: str, measured: bool = False):
    """``--plot FILE`` (and with ``measured``, ``--measured FILE``) for ``whatif`` / ``sweep``."""

    def deco(fn):
        opts = [click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
                             help=f"draw {what} to FILE.png or FILE.svg (extra 'plot': matplotlib)")]
        if measured:
            opts.append(click.option("--measured", "measured_path", type=click.Path(dir_okay=False), default=None,
                                     help="CSV of measured cycles (a header with warps or blocks, and cycles) "
                                          "overlaid on the --plot"))
        opts.append(FORCE)
        for o in reversed(opts):
            fn = o(fn)
        return fn

    return deco


def check_plot(path, force: bool = False) -> None:
    """Refuse, before any run, a plot path of an unknown format, one teg may not write
    (:func:`teg.fileio.prepare`), or a plot without matplotlib."""
    if path is None:
        return
    from teg import fileio
    from teg.report.plots import PlotError, _pyplot, suffix_ok

    if not suffix_ok(path):
        raise PlotError(f"{path}: the plot's format comes from its suffix: .png or .svg")
    fileio.prepare(path, fileio.figure_owned, force, folder=False)
    _pyplot()


@dataclass
class EstimateReports:
    """What ``teg estimate`` was asked to show besides its numbers (checked on construction): the
    views to print (:mod:`teg.report.views`, each owning its text and its part of the JSON; with
    ``--json`` every view), and the timeline and plot files to write."""

    views: tuple = ()
    as_json: bool = False
    timeline_path: str | None = None
    window: object = None           # the timeline's cycles (teg.report.timeline.Window), with a timeline only
    plot_path: str | None = None
    force: bool = False

    @classmethod
    def from_cli(cls, views: str, as_json: bool, timeline_path, timeline_cycles, plot_path,
                 force: bool = False) -> "EstimateReports":
        from teg.report.instructions import parse_views
        from teg.report.views import ALL_VIEWS, estimate_views

        if timeline_cycles and not timeline_path:
            raise click.UsageError("--timeline-cycles bounds the --timeline: give --timeline FILE.json too")
        window = None
        if timeline_path:
            from teg.report.timeline import Window, check_timeline_target

            window = Window.parse(timeline_cycles)
            check_timeline_target(timeline_path, force)
        check_plot(plot_path, force)
        names = parse_views(views)
        return cls(views=ALL_VIEWS if as_json else estimate_views(names), as_json=as_json,
                   timeline_path=timeline_path, window=window, plot_path=plot_path, force=force)

    def prepare(self, inp):
        """The lowered input, set to record what the views and the timeline need (a timeline that
        could not be made, or whose records would not fit in memory, is refused here, before the
        run)."""
        from teg.engine.records import with_records
        from teg.report.views import records_of

        if self.timeline_path:
            from teg.report.timeline import check_timeline_size

            check_timeline_size(inp, self.window)

        return with_records(inp, timeline=self.timeline_path is not None,
                            instructions="instructions" in records_of(self.views))

    def render(self, est) -> str:
        """Write the timeline and the plot of ``est`` (:class:`teg.engine.runner.Estimate`), and
        return the views' text (or their JSON) to print."""
        from teg.report.views import views_json, views_text

        result, inp = est.result, est.lowered
        if self.timeline_path:
            from teg.report.timeline import write_timeline

            n = write_timeline(self.timeline_path, result, inp, self.window,
                               options=dict(asdict(est.options), record_timeline=True), force=self.force)
            click.echo(f"teg: timeline of {n:,} events in {self.timeline_path} (open it at ui.perfetto.dev; "
                       "1 us = 1 cycle)", err=True)
        if self.plot_path:
            from teg.report.plots import stall_figure

            stall_figure(result, self.plot_path, force=self.force)
        return views_json(self.views, est) if self.as_json else views_text(self.views, est)
