"""``Program.functions`` is an ordered, immutable name -> function mapping."""

import dataclasses
import pickle

import pytest

from pypto.ir import Function, FunctionKind, FunctionMap, Program, VerificationError


def _fn(name: str, kind: FunctionKind = FunctionKind.InCore) -> Function:
    return Function(name, (), (), kind)


def _program() -> Program:
    return Program("p", (_fn("main", FunctionKind.Orchestration), _fn("k"), _fn("a")), "main")


def test_functions_read_by_name_in_program_order() -> None:
    program = _program()
    assert isinstance(program.functions, FunctionMap)
    assert list(program.functions) == ["main", "k", "a"]
    assert program.functions["k"].name == "k"
    assert "a" in program.functions and "zz" not in program.functions
    assert len(program.functions) == 3
    assert [name for name, _ in program.functions.items()] == ["main", "k", "a"]
    assert [fn.name for fn in program.functions.values()] == ["main", "k", "a"]
    assert program.function("k") is program.functions["k"]


def test_functions_cannot_be_assigned_to() -> None:
    with pytest.raises(TypeError):
        _program().functions["x"] = _fn("x")  # type: ignore[index]


def test_a_mapping_or_replace_with_a_tuple_is_normalized() -> None:
    program = _program()
    replaced = dataclasses.replace(program, functions=(program.entry_function,))
    assert list(replaced.functions) == ["main"]
    again = Program("q", program.functions, "main")
    assert list(again.functions) == ["main", "k", "a"]


def test_two_functions_of_one_name_are_an_error() -> None:
    with pytest.raises(VerificationError, match="two functions named 'k'"):
        Program("p", (_fn("k"), _fn("k")), "k")


def test_func_type_is_the_kind() -> None:
    fn = _fn("k", FunctionKind.AIV)
    assert fn.func_type is FunctionKind.AIV
    assert (fn.name, fn.params, fn.body) == ("k", (), ())


def test_a_program_pickles_with_its_function_order() -> None:
    program = pickle.loads(pickle.dumps(_program()))
    assert list(program.functions) == ["main", "k", "a"]
