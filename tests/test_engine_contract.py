"""The engine's contract is declared once: the mechanisms (teg.engine.options.MECHANISMS) are the
Options switches, the what-if rows and the engine's switch scalars; the scalars have one encoder
that gives every input the same numba type, whether lowered or built by hand."""

from __future__ import annotations

import dataclasses

import numba
import numpy as np
import pytest

from teg.engine import MECHANISMS, Options, lower, run, with_switches
from teg.engine.handmade import make_input
from teg.engine.lowered import with_scalars
from teg.engine.scalars import FLAG, GEOMETRY, SCALARS, ScalarError, Scalars, scalars
from teg.machine import load as load_machine
from teg.resources import traces_dir


@pytest.fixture(scope="module")
def example():
    from teg.sass import parse_file
    from teg.trace import load

    d = traces_dir()
    return parse_file(str(d / "matmul_abt.sm_90.sass"))[0], load(d / "matmul_abt.sm_90.trace.npz").kernels[0]


def _hand():
    return make_input(lat_exec=[4, 4], lat_multi=[1, 1], lat_same=[1, 1], dst=[[4], [5]], src=[[2], [4]])


def test_the_options_switches_are_the_declared_mechanisms_in_order():
    switches = [f.name for f in dataclasses.fields(Options) if f.type in (bool, "bool")]
    assert switches[:len(MECHANISMS)] == list(MECHANISMS)
    assert set(switches) - set(MECHANISMS) == {"record_timeline", "record_order"}     # the two record options
    for name in MECHANISMS:
        assert f"``{name}``" in Options.__doc__, f"Options does not document the switch {name}"


def test_every_mechanism_is_an_engine_switch_scalar_on_by_default():
    decl = {name: (kind, default) for name, kind, default, _ in SCALARS}
    for name in MECHANISMS:
        assert decl[name] == (FLAG, True), name
    assert len(Scalars._fields) == len(set(Scalars._fields))


def test_lowering_sets_each_switch_from_its_option(example):
    prog, kt = example
    m = load_machine("sm_90")
    base = lower(prog, kt, m, Options(sms=1))
    assert all(getattr(base.scalars, name) is True for name in MECHANISMS)
    for name in MECHANISMS:
        off = lower(prog, kt, m, Options(sms=1).without(name))
        assert off.scalars == base.scalars._replace(**{name: False}), name
        assert with_switches(base, **{name: False}).scalars == off.scalars, name


def test_with_switches_refuses_an_unknown_mechanism():
    with pytest.raises(KeyError, match="unknown mechanism 'bank_conflict'"):
        with_switches(_hand(), bank_conflict=False)


def test_the_encoder_coerces_every_value_to_its_kind():
    inp = _hand()
    sc = with_scalars(inp, sms=np.int32(1), issue_interval=2, l2=[np.int64(16), 4, 128.0, 32],
                      barriers=np.int8(0)).scalars
    assert type(sc.sms) is int and type(sc.issue_interval) is float and type(sc.barriers) is bool
    assert sc.l2 == (16, 4, 128, 32) and all(type(v) is int for v in sc.l2)
    assert numba.typeof(sc) == numba.typeof(inp.scalars)


def test_the_encoder_refuses_unknown_names_bad_geometries_and_missing_values():
    with pytest.raises(ScalarError, match="unknown engine scalar 'smss'"):
        scalars(_hand().scalars, smss=2)
    with pytest.raises(ScalarError, match="geometry"):
        scalars(_hand().scalars, l1=(4, 4, 128))
    with pytest.raises(ScalarError, match="has no default"):
        scalars(sms=1)
    kinds = {kind for _, kind, _, _ in SCALARS}
    assert GEOMETRY in kinds


def test_lowered_and_hand_built_inputs_have_one_numba_type(example):
    """Both encoders give the loop the same argument types, so it is compiled once."""
    prog, kt = example
    lowered = lower(prog, kt, load_machine("sm_90"))
    hand = _hand()
    for table in ("static", "rows", "grid", "scalars"):
        assert numba.typeof(getattr(lowered, table)) == numba.typeof(getattr(hand, table)), table


def test_a_switch_copy_shares_the_arrays_and_changes_one_scalar():
    inp = _hand()
    off = with_switches(inp, dependencies=False)
    assert off.static is inp.static and off.rows is inp.rows and off.grid is inp.grid
    assert [f for f in Scalars._fields if getattr(off.scalars, f) != getattr(inp.scalars, f)] == ["dependencies"]
    assert run(off).cycles < run(inp).cycles          # the consumer no longer waits for its producer
