"""The options ``teg estimate``, ``teg whatif`` and ``teg sweep`` share, declared once, and what
they become: the kernel's inputs (:func:`kernel_inputs`, the bundled example when neither
``--sass`` nor ``--trace`` is given), the engine's :class:`~teg.engine.options.Options`
(:func:`engine_options`), an executor (:func:`make_executor`), warp lists (:func:`int_list`; the
default one is :data:`teg.analysis.sweep.DEFAULT_WARPS`).

Nothing here imports the engine until a command runs."""

from __future__ import annotations

import click

EXAMPLE_SASS = "matmul_abt.sm_90.sass"
EXAMPLE_TRACE = "matmul_abt.sm_90.trace.npz"

# the engine options a command line may set, as named in Options
ENGINE_PARAMS = ("policy", "dependency_model", "sms", "sampling", "unknown", "shared_carveout", "blocks_per_sm")


def int_list(text: str, option: str = "--warps") -> list[int]:
    """``"1,2,4"`` → [1, 2, 4]; anything else (empty, not integers, below 1) is a one-line error."""
    from teg.engine.options import OptionsError

    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise OptionsError(f"{option} {text!r}: expected comma-separated integers") from None
    if not vals or min(vals) < 1:
        raise OptionsError(f"{option} {text!r}: expected comma-separated positive integers")
    return vals


def _apply(fn, opts: list):
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _input_options() -> list:
    return [
        click.option("--sass", type=click.Path(), default=None, help="SASS text (cuobjdump/nvdisasm) or a cubin/ELF"),
        click.option("--trace", "trace_path", type=click.Path(), default=None,
                     help="instruction trace: Accel-Sim kernelslist.g/.traceg[.xz] or a teg native trace"),
        click.option("--kernel", default=None, help="kernel name (mangled or demangled, or a substring); of an "
                     "application's kernels also ids 1,4-9 or re:PATTERN (several: the application report)"),
        click.option("--machine", default=None, help="machine table name or YAML file (default: suggested by "
                     "the trace's binary version or the SASS target)"),
        click.option("--policy", type=click.Choice(["gto", "gty", "lrr"]), default=None,
                     help="warp scheduling: greedy-then-oldest, greedy-then-youngest or loose round-robin "
                          "[default: the machine table's scheduler_policy, else gto]"),
        click.option("--deps", "dependency_model", type=click.Choice(["auto", "scoreboard", "controlcodes"]),
                     default="auto", show_default=True, help="dependency model"),
        click.option("--sms", type=int, default=None,
                     help="sample N SMs instead of simulating every SM (the default): SMs 0..N-1 run the "
                          "blocks --sampling deals them, with its share of the DRAM bandwidth and L2"),
        click.option("--sampling", type=click.Choice(["waves", "round-robin"]), default="waves", show_default=True,
                     help="how --sms N deals the blocks: waves = as the hardware deals them to identical SMs "
                          "(first wave breadth-first, later blocks R at a time to SMs in index order, so SMs "
                          "0..N-1 are the most loaded; their share of the blocks is their share of DRAM and "
                          "L2); round-robin = TEG's method (block j to SM j mod SMs, N/busy of DRAM and L2)"),
        click.option("--unknown", type=click.Choice(["error", "alu"]), default="error", show_default=True,
                     help="opcodes the machine table does not know: error, or time them as integer ALU"),
        click.option("--shared-carveout", "shared_carveout", type=click.FloatRange(0, 100), default=None,
                     metavar="PCT", help="the kernel's cudaFuncAttributePreferredSharedMemoryCarveout (percent of "
                     "the SM's shared memory): occupancy and the L1 follow the carveout the driver picks for it "
                     "(default: the driver's own choice)"),
    ]


def _executor_options() -> list:
    from teg.analysis.executors import EXECUTORS

    return [
        click.option("--jobs", "-j", type=int, default=None,
                     help="processes for the kernels of an application or the points of a sweep "
                          "(default: every core this process may use; 1 = all in this process)"),
        click.option("--executor", "executor_kind", type=click.Choice(EXECUTORS), default="local", show_default=True,
                     help="local: a process pool on this machine; dask: a Dask cluster (--scheduler, else a "
                          "LocalCluster of --jobs workers; extra 'dask')"),
        click.option("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://HOST:8786 "
                     "(with --executor dask; the workers must see the trace files at the same paths)"),
    ]


def input_options(fn):
    """The inputs and engine options of estimate / whatif / sweep (:data:`INPUT_PARAMS`)."""
    return _apply(fn, _input_options())


def executor_options(fn):
    """``--jobs``, ``--executor``, ``--scheduler``: where an application's kernels or a sweep's
    points run (:data:`EXECUTOR_PARAMS`)."""
    return _apply(fn, _executor_options())


def _names(decorator) -> tuple[str, ...]:
    """The parameter names a click option decorator declares."""
    def f():
        pass
    return tuple(p.name for p in reversed(decorator(f).__click_params__))


INPUT_PARAMS = _names(input_options)
EXECUTOR_PARAMS = ("jobs", "executor_kind", "scheduler")
# the parameters an application run understands: any other given on the command line is for one
# kernel (refused with several: :func:`teg.cli.target.refuse_single_kernel_options`)
APP_PARAMS = frozenset(INPUT_PARAMS + EXECUTOR_PARAMS + ("blocks_per_sm", "as_json", "as_csv", "warps", "force",
                                                         "spec", "output", "retry_failed"))


def engine_options(params: dict):
    """The engine's :class:`~teg.engine.options.Options` from a command's parameters (those of
    :data:`ENGINE_PARAMS` given; the rest keep their defaults)."""
    from click.core import ParameterSource

    from teg.engine.options import Options

    ctx = click.get_current_context(silent=True)
    if (ctx is not None and params.get("sms") is None
            and ctx.get_parameter_source("sampling") not in (ParameterSource.DEFAULT, None)):
        raise click.UsageError("--sampling deals the blocks of sampled SMs: give --sms N with it (without --sms "
                               "every SM is simulated and blocks are dealt as they free slots)")
    return Options(**{k: params[k] for k in ENGINE_PARAMS if params.get(k) is not None})


def make_executor(params: dict):
    """The :class:`~teg.analysis.executors.Executor` of ``--jobs``/``--executor``/``--scheduler``
    (checked here: a bad combination is a one-line error)."""
    from teg.analysis.executors import Executor

    return Executor(kind=params["executor_kind"], jobs=params["jobs"], scheduler=params["scheduler"])


def kernel_inputs(sass, trace, kernel, machine):
    """The kernel's inputs resolved (:func:`teg.engine.kernel_inputs.load_inputs`); with neither
    ``sass`` nor ``trace``, the bundled example (traces/)."""
    from teg.engine.kernel_inputs import load_inputs
    from teg.resources import traces_dir

    if sass is None and trace is None:
        d = traces_dir()
        sass, trace = d / EXAMPLE_SASS, d / EXAMPLE_TRACE
    return load_inputs(sass=sass, trace=trace, machine=machine, kernel=kernel)


def opt_name(param: str) -> str:
    """The command-line spelling of the current command's parameter ``param`` (``--blocks-per-sm``)."""
    ctx = click.get_current_context()
    return next((p.opts[0] for p in ctx.command.params if p.name == param), param)
