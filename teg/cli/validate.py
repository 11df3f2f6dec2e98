"""``teg validate measure|predict|report`` and ``teg calibrate``: measured ground truth, teg's
predictions for the same cases, the accuracy report, and table calibration."""

from __future__ import annotations

import json

import click

from teg.cli.errors import user_errors


def _warps(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        ws = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected a comma-separated list of integers, got {text!r}") from None
    if not ws or any(w < 1 for w in ws):
        raise click.BadParameter("warp counts must be positive")
    return ws


def _progress(quiet: bool):
    return None if quiet else (lambda msg: click.echo(f"  {msg}", err=True))


def _select(suite, cases: tuple[str, ...], groups: tuple[str, ...]):
    return suite.select(cases, groups) if (cases or groups) else suite.cases


def _check_output(path: str, force: bool) -> None:
    """Refuse an output teg may not replace before the long run, not after it."""
    from teg import fileio

    fileio.prepare(path, fileio.json_schema_owned("teg.validate."), force)


def _write_json(doc: dict, path: str, force: bool) -> None:
    """Write a validation document atomically; replace only one teg wrote (or ``force``)."""
    from teg import fileio

    fileio.write_text(path, json.dumps(doc, indent=1) + "\n", fileio.json_schema_owned("teg.validate."), force)


_FORCE = click.option("--force", is_flag=True, help="overwrite the output even if teg did not write it")


@click.group()
def validate() -> None:
    """Measured ground truth: run the validation suite on a GPU, predict it, report the error."""


@validate.command("measure")
@click.option("-o", "--output", default="measured.json", show_default=True, help="JSON file to write.")
@click.option("--case", "cases", multiple=True, help="Case name or shell pattern (repeatable).")
@click.option("--group", "groups", multiple=True, help="Only cases of this group (repeatable; combined with --case, both must match).")
@click.option("--warps", help="Comma-separated warps per SM (default: 1,2,4,8,16,32,64).")
@click.option("--repeats", default=5, show_default=True, type=int, help="Timed launches per point (median).")
@click.option("--device", default=0, show_default=True, type=int, help="CUDA device ordinal.")
@click.option("--arch", help="Compile for this sm_XX (default: the GPU's).")
@click.option("--nvcc", help="nvcc to use (default: PATH, $NVCC, $CUDA_HOME/bin).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
@_FORCE
@user_errors
def measure_cmd(output, cases, groups, warps, repeats, device, arch, nvcc, quiet, force):
    """Compile the suite, run it on the local GPU and write the measured cycles."""
    from teg.validate import measure, suite

    _check_output(output, force)
    s = suite.load()
    doc = measure.measure(s, _select(s, cases, groups), _warps(warps), repeats=repeats, device=device,
                          arch=arch, nvcc=nvcc, progress=_progress(quiet))
    _write_json(doc, output, force)
    g = doc["gpu"]
    click.echo(f"measured {len(doc['cases'])} cases on {g['name']} ({g['arch']}, {g['num_sms']} SMs, "
               f"{g['clock_mhz']} MHz, driver {g['driver_version']}) -> {output}")


@validate.command("predict")
@click.option("-o", "--output", default="predicted.json", show_default=True, help="JSON file to write.")
@click.option("-m", "--machine", default="sm_90", show_default=True, help="Machine table (name or .yaml).")
@click.option("--measured", type=click.Path(exists=True, dir_okay=False),
              help="Predict exactly the cases/warps (and SM count) of this measured file.")
@click.option("--case", "cases", multiple=True, help="Case name or shell pattern (repeatable).")
@click.option("--group", "groups", multiple=True, help="Only cases of this group (repeatable; combined with --case, both must match).")
@click.option("--warps", help="Comma-separated warps per SM.")
@click.option("--no-models", is_flag=True, help="Only the engine, no analytical models.")
@click.option("--nvcc", help="nvcc to use.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
@_FORCE
@user_errors
def predict_cmd(output, machine, measured, cases, groups, warps, no_models, nvcc, quiet, force):
    """Predict the suite's cases with the engine and the analytical models."""
    from teg.validate import predict, report, suite

    _check_output(output, force)
    s = suite.load()
    meas = report.load_document(measured, "measured") if measured else None
    doc = predict.predict(s, machine, _select(s, cases, groups), _warps(warps), measured=meas, nvcc=nvcc,
                          with_models=not no_models, progress=_progress(quiet))
    _write_json(doc, output, force)
    failures = sum(1 for c in doc["cases"] for r in c["results"] if r.get("errors"))
    click.echo(f"predicted {len(doc['cases'])} cases on {doc['machine']} -> {output}"
               + (f" ({failures} points with errors; see 'errors' in the file)" if failures else ""))


@validate.command("report")
@click.argument("measured", type=click.Path(exists=True, dir_okay=False))
@click.option("-p", "--predicted", type=click.Path(exists=True, dir_okay=False),
              help="Predicted file (default: predict now with --machine).")
@click.option("-m", "--machine", default="sm_90", show_default=True, help="Machine table when predicting now.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--plots", type=click.Path(file_okay=False), help="Write plots (PNG) into this folder.")
@click.option("--error-basis", type=click.Choice(["measured", "predicted"]), default="measured", show_default=True,
              help="Divide by measured (usual) or by predicted (the TEG report's tables).")
@user_errors
def report_cmd(measured, predicted, machine, as_json, plots, error_basis):
    """Per-case error and MAPE per group and model of predictions against MEASURED."""
    from teg.validate import predict as predict_mod
    from teg.validate import report, suite

    meas = report.load_document(measured, "measured")
    if predicted:
        pred = report.load_document(predicted, "predicted")
    else:
        pred = predict_mod.predict(suite.load(), machine, measured=meas)
        pred["path"] = f"(predicted now on {machine})"
    doc = report.build(meas, pred, error_basis)
    if plots:
        try:
            doc["plots"] = report.plot(doc, plots)
        except report.ValidationDataError as exc:
            doc["plots_note"] = f"plots skipped: {exc}"
    if as_json:
        click.echo(json.dumps(doc, indent=1))
    else:
        click.echo(report.render_text(doc), nl=False)
        if doc.get("plots"):
            click.echo("plots: " + ", ".join(doc["plots"]))
        if doc.get("plots_note"):
            click.echo(doc["plots_note"])


@click.command("calibrate")
@click.argument("measured", type=click.Path(exists=True, dir_okay=False))
@click.option("--base", default="sm_90", show_default=True, help="Machine table to extend (name or .yaml).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Machine table to write (.yaml).")
@click.option("--name", help="Name of the new table (default: the output's file stem).")
@_FORCE
@user_errors
def calibrate_cmd(measured, base, output, name, force):
    """Fit latencies and unit occupancies from MEASURED micro-benchmarks into a new machine table."""
    from teg.validate import calibrate, report

    meas = report.load_document(measured, "measured")
    fits = calibrate.calibrate(meas, base, output, name, force=force)
    if meas.get("synthetic"):
        click.echo("NOTE: the measured file is marked synthetic (not hardware data).")
    w = max(len(f.key()) for f in fits)
    click.echo(f"{'parameter':<{w}}  {'fitted':>9}  {'base':>9}  {'r2':>7}  cases")
    for f in fits:
        base_s = "—" if f.base is None else f"{f.base:.2f}"
        r2 = "—" if f.r2 is None else f"{f.r2:.4f}"
        click.echo(f"{f.key():<{w}}  {f.value:>9.2f}  {base_s:>9}  {r2:>7}  {len(f.cases)}")
    click.echo(f"wrote {output} (extends {base}; loads with teg.machine.load)")
