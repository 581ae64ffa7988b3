"""Printed IR is ``pl`` that parses back into an equal program, and every pass dump is a program
that runs (issue #11 item 3). The examples run with ``PYPTO_VERIFICATION_LEVEL=roundtrip``
(tests/test_examples.py), which checks the same after every pass of every compile."""

from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir import (
    INDEX,
    Assign,
    Const,
    DataType,
    Direction,
    Eval,
    Function,
    FunctionKind,
    Param,
    Program,
    Return,
    TensorType,
    TupleExpr,
    TupleType,
    Var,
    VerificationError,
    make_call,
    structural_diff,
)
from pypto.ir.ops import op, tile
from pypto.runtime import RunConfig, VerificationLevel, compile_program, run

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.txt")), ids=lambda p: p.name)
def test_every_golden_program_round_trips(path):
    text = path.read_text()
    program = pl.parse(text, filename=str(path))
    assert program.as_python() == text
    assert structural_diff(program, pl.parse(program.as_python())) is None


def test_the_seed_golden_runs_as_a_program_against_torch():
    program = pl.parse((GOLDEN / "seed_step1_lowered.txt").read_text())
    torch.manual_seed(0)
    a, b = torch.randn(128, 256, dtype=torch.float16), torch.randn(256, 128, dtype=torch.float16)
    bias, out = torch.randn(128, 128), torch.zeros(128, 128)
    run(program, a, b, bias, out, config=RunConfig(platform="a2a3sim"))
    assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)


@pl.jit
def softmax_mixed(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mm"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        mx = pl.row_max(acc)
        out[:] = pl.exp(pl.row_expand_sub(acc, mx))
    return out


def test_every_pass_dump_parses_back_and_runs_with_torchs_numbers(tmp_path):
    torch.manual_seed(1)
    a, b = torch.randn(256, 128, dtype=torch.float16), torch.randn(128, 64, dtype=torch.float16)
    want = a.float() @ b.float()
    want = torch.exp(want - want.max(dim=1, keepdim=True).values)
    out = torch.zeros(256, 64)
    softmax_mixed(a, b, out, config=RunConfig(dump_passes=tmp_path))
    dumps = sorted(tmp_path.glob("*.py"))
    assert len(dumps) >= 8  # one per pass of the default pipeline
    for dump in dumps:
        program = pl.parse(dump.read_text(), filename=str(dump))
        got = torch.zeros(256, 64)
        run(program, a, b, got, config=RunConfig(platform="a2a3sim"))
        assert torch.allclose(got, want, rtol=2e-2, atol=2e-2), dump.name
        assert torch.equal(got, out), dump.name  # the same program, the same numbers


def test_roundtrip_verification_checks_every_pass_of_a_compile():
    config = RunConfig(verification_level=VerificationLevel.ROUNDTRIP)
    compiled = softmax_mixed.compile(
        pl.Tensor[[128, 128], pl.FP16],
        pl.Tensor[[128, 64], pl.FP16],
        pl.Out[pl.Tensor[[128, 64], pl.FP32]],
        config=config,
    )
    assert "mm_aiv" in compiled.lowered.functions


def test_roundtrip_verification_names_the_pass_whose_program_does_not_read_back(monkeypatch):
    import pypto.language

    real = pypto.language.parse_program

    def losing_attrs(text, *args, **kwargs):
        program = real(text, *args, **kwargs)
        return program.with_functions(
            fn if not fn.attrs else type(fn)(fn.name, fn.params, fn.body, fn.kind, fn.span, {})
            for fn in program.functions.values()
        )

    from pypto.runtime.compiling import compiled

    monkeypatch.setattr(compiled, "_READER", [losing_attrs])
    parsed = softmax_mixed.parse(
        torch.zeros(128, 128, dtype=torch.float16),
        torch.zeros(128, 64, dtype=torch.float16),
        torch.zeros(128, 64),
    )
    with pytest.raises(VerificationError, match=r"after pass \d+ \(\w+\) parses back as a different program"):
        compile_program(parsed, RunConfig(verification_level=VerificationLevel.ROUNDTRIP))


def test_the_verification_level_can_be_set_for_the_session(monkeypatch):
    monkeypatch.setenv("PYPTO_VERIFICATION_LEVEL", "roundtrip")
    assert RunConfig().verification_level is VerificationLevel.ROUNDTRIP
    monkeypatch.setenv("PYPTO_VERIFICATION_LEVEL", "sometimes")
    from pypto.runtime.settings import ConfigError

    with pytest.raises(ConfigError, match="names no verification level"):
        RunConfig()


def test_a_plugins_own_enum_prints_with_its_import_and_reads_back(tmp_path, monkeypatch):
    (tmp_path / "tone_plugin.py").write_text("import enum\n\n\nclass Tone(enum.Enum):\n    LOUD = 'loud'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import tone_plugin

    parsed = softmax_mixed.parse(
        torch.zeros(128, 128, dtype=torch.float16),
        torch.zeros(128, 64, dtype=torch.float16),
        torch.zeros(128, 64),
    )
    entry = parsed.entry_function
    tagged = parsed.replace_function(
        type(entry)(
            entry.name, entry.params, entry.body, entry.kind, entry.span, {"tone": tone_plugin.Tone.LOUD}
        )
    )
    text = tagged.as_python()
    assert text.startswith("import tone_plugin\n")
    assert "pl.func_attr({'tone': tone_plugin.Tone.LOUD})" in text
    again = pl.parse(text)
    assert again.entry_function.attrs == {"tone": tone_plugin.Tone.LOUD}
    assert structural_diff(tagged, again) is None


def named_program():
    """A kernel whose variables are named `pl` (a parameter), `lambda` twice (two variables)."""
    t = TensorType((64, 64), DataType.FP32)
    a, out = Var("pl", t), Var("out", t)
    origin = TupleExpr((Const(0, INDEX), Const(0, INDEX)), TupleType((INDEX, INDEX)))
    load = make_call(tile.load, (a, origin), {"shape": (64, 64), "target_memory": pl.Mem.Vec})
    first = Var("lambda", load.type)
    second = Var("lambda", load.type)
    body = (
        Assign(first, load),
        Assign(second, make_call(tile.exp, (first,), {})),
        Eval(make_call(tile.store, (second, origin, out), {})),
        Return((out,)),
    )
    kernel = Function("k", (Param(a), Param(out, Direction.Out)), body, FunctionKind.InCore)
    x, y = Var("self", t), Var("y", t)
    call = make_call(op.call, (x, y), {"callee": "k"}, type=t)
    entry = Function(
        "main", (Param(x), Param(y, Direction.Out)), (Eval(call), Return((y,))), FunctionKind.Orchestration
    )
    return Program("Named", (entry, kernel), "main")


def test_names_python_would_read_otherwise_print_with_a_suffix_and_read_back():
    program = named_program()
    text = program.as_python()
    assert "lambda_1: " in text and "lambda_2: " in text and "pl_1: " in text and "self_1: " in text
    again = pl.parse(text)
    assert structural_diff(program, again, names=False) is None
    x = torch.randn(64, 64)
    y = torch.zeros(64, 64)
    run(again, x, y)
    assert torch.allclose(y, torch.exp(x))


def test_roundtrip_without_the_pl_parser_loaded_says_what_to_import(monkeypatch):
    from pypto.runtime.compiling import compiled
    from pypto.runtime.settings import ConfigError

    monkeypatch.setattr(compiled, "_READER", [])
    parsed = pl.parse((GOLDEN / "seed_step1_lowered.txt").read_text())
    with pytest.raises(ConfigError, match="pl parser") as info:
        compile_program(parsed, RunConfig(verification_level=VerificationLevel.ROUNDTRIP))
    assert "import pypto.language" in info.value.hint
