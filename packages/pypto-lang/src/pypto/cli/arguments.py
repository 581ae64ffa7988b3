"""``--arg name=fp16[128,256]``: the shapes and scalars ``pypto compile`` specializes a kernel for.

A value is a tensor ``DTYPE[D0,D1,...]`` (a dtype name and one or more positive integer
dimensions) or a scalar: an integer, a decimal number, ``true`` or ``false``. Anything else is an
:class:`~pypto.cli.errors.ArgumentError` that names the ``--arg`` and the form expected.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any

from pypto.cli.errors import ArgumentError
from pypto.ir import DataType
from pypto.ir.extents import Extent
from pypto.language.annotations import ScalarSpec, TensorSpec
from pypto.language.jit import JitFunction
from pypto.language.parser.signature import signature_of

_TENSOR = re.compile(r"^(?P<dtype>[A-Za-z][A-Za-z0-9]*)\[(?P<shape>[^\[\]]*)\]$")
_INT = re.compile(r"^[+-]?[0-9]+$")
_DIGITS = re.compile(r"^[0-9]+$")
_FLOAT = re.compile(r"^[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?$")
_BOOLS = {"true": True, "false": False}
TENSOR_FORM = "DTYPE[D0,D1,...] with a positive integer per dimension, e.g. fp16[128,256]"
PAIR_FORM = "NAME=VALUE, e.g. a=fp16[128,256] for a tensor or n=4 for a scalar"
DTYPES = [d for d in DataType if d is not DataType.INDEX]


def _error(pair: str, problem: str, hint: str) -> ArgumentError:
    return ArgumentError(f"--arg {pair}: {problem}", hint=hint)


def _dtype(name: str, pair: str) -> DataType:
    """A tensor's dtype by name; INDEX is the scalar type of offsets and loop indices, no tensor's."""
    dtype = DataType.__members__.get(name.upper())
    if dtype not in DTYPES:
        known = ", ".join(d.name.lower() for d in DTYPES)
        raise _error(pair, f"unknown dtype {name!r}; dtypes: {known}", f"write {TENSOR_FORM}")
    return dtype


def _dims(shape: str, pair: str) -> list[int]:
    """``"128, 256"`` -> ``[128, 256]``; an empty, non-integer or zero dimension is an error."""
    if not shape.strip():
        raise _error(pair, "a tensor needs at least one dimension", f"write {TENSOR_FORM}")
    dims = []
    for position, text in enumerate(shape.split(","), start=1):
        text = text.strip()
        if not text:
            problem = f"dimension {position} of [{shape}] is empty"
        elif not _DIGITS.match(text):
            problem = f"dimension {position} of [{shape}] is {text!r}, not a positive integer"
        elif int(text) == 0:
            problem = f"dimension {position} of [{shape}] is 0; a dimension is a positive integer"
        else:
            dims.append(int(text))
            continue
        raise _error(pair, problem, f"write {TENSOR_FORM}")
    return dims


def tensor_stand_in(dtype: DataType, shape: Sequence[Extent]) -> TensorSpec:
    """What stands in for a tensor when compiling: its annotation, ``pl.Tensor[shape, dtype]``
    (it carries a shape and a dtype, and needs no torch)."""
    return TensorSpec(tuple(shape), dtype)


def scalar_literal(text: str) -> int | float | bool | None:
    """``4`` -> 4, ``0.5`` -> 0.5, ``true`` / ``false`` -> a bool; None for anything else."""
    value = text.strip()
    if value.lower() in _BOOLS:
        return _BOOLS[value.lower()]
    if _INT.match(value):
        return int(value)
    if _FLOAT.match(value):
        return float(value)
    return None


def parse_value(text: str, pair: str | None = None) -> Any:
    """``fp16[128,256]`` -> a stand-in tensor; ``4``, ``0.5``, ``true`` -> a Python scalar.

    ``pair`` is the whole ``--arg`` as given, for the error messages (default: ``text``).
    """
    pair = text if pair is None else pair
    value = text.strip()
    if "[" in value or "]" in value:
        match = _TENSOR.match(value)
        if not match:
            raise _error(pair, f"{value!r} is not a tensor", f"write {TENSOR_FORM}")
        return tensor_stand_in(_dtype(match["dtype"], pair), _dims(match["shape"], pair))
    literal = scalar_literal(value)
    if literal is not None:
        return literal
    problem = f"{value!r} is neither a tensor like fp16[128,256] nor a number"
    raise _error(pair, problem, "write a tensor as DTYPE[D0,D1,...] or a scalar as 4, 0.5, true or false")


def parse_args(pairs: Sequence[str]) -> dict[str, Any]:
    """``["a=fp16[128,256]", "n=4"]`` -> ``{"a": <meta tensor>, "n": 4}``."""
    values: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise _error(pair, f"{pair!r} is not NAME=VALUE", f"write {PAIR_FORM}")
        if not text.strip():
            raise _error(pair, f"{name} has no value", f"write {PAIR_FORM}")
        if name in values:
            raise _error(pair, f"{name} is given twice", f"pass one --arg per parameter ({PAIR_FORM})")
        values[name] = parse_value(text, pair)
    return values


def compile_arguments(kernel: JitFunction, given: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments to compile ``kernel`` with: none when ``--arg`` gave nothing and every
    tensor parameter is fully annotated (scalars then stay run-time values), else one per parameter.
    """
    if not given and all(_fixed(sig.spec) for sig in signature_of(kernel)):
        return {}
    return call_arguments(kernel, given)


def _fixed(spec: Any) -> bool:
    return not isinstance(spec, TensorSpec) or (spec.shape is not None and spec.dtype is not None)


def call_arguments(kernel: JitFunction, given: dict[str, Any]) -> dict[str, Any]:
    """One value per parameter: the ``--arg`` given, else one made from a full annotation."""
    names = [sig.name for sig in signature_of(kernel)]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ArgumentError(
            f"--arg: {kernel.name} has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters: {', '.join(names)}",
            hint=f"name one of its parameters, e.g. --arg {names[0]}=..." if names else "pass no --arg",
        )
    for sig in signature_of(kernel):
        if sig.name in given:
            _check_kind(kernel, sig, given[sig.name])
    return {
        sig.name: given[sig.name] if sig.name in given else _annotated(kernel, sig)
        for sig in signature_of(kernel)
    }


def _check_kind(kernel: JitFunction, sig: Any, value: Any) -> None:
    """A tensor parameter takes ``DTYPE[...]``, a scalar one a number: say so in --arg's terms."""
    is_tensor = isinstance(value, TensorSpec)
    if isinstance(sig.spec, TensorSpec) and not is_tensor:
        raise ArgumentError(
            f"--arg {sig.name}: parameter {sig.name!r} of {kernel.name} is a tensor ({sig.spec}), "
            f"but the value is the number {value!r}",
            hint=f"give its dtype and shape: --arg {sig.name}=fp16[128,256]",
        )
    if isinstance(sig.spec, ScalarSpec) and is_tensor:
        raise ArgumentError(
            f"--arg {sig.name}: parameter {sig.name!r} of {kernel.name} is a scalar ({sig.spec}), "
            f"but the value is a tensor ({value})",
            hint=f"give its value: --arg {sig.name}=4",
        )


def _annotated(kernel: JitFunction, sig: Any) -> Any:
    spec = sig.spec
    if isinstance(spec, TensorSpec) and _fixed(spec):
        assert spec.dtype is not None and spec.shape is not None
        return tensor_stand_in(spec.dtype, spec.shape)
    if isinstance(spec, ScalarSpec):
        default = kernel.python_signature.parameters[sig.name].default
        if default is not inspect.Parameter.empty:
            return default
    example = "fp16[128,256]" if isinstance(spec, TensorSpec) else "4"
    raise ArgumentError(
        f"parameter {sig.name!r} of {kernel.name} is annotated {spec}, which fixes no value to compile for",
        hint=f"give it one: --arg {sig.name}={example}",
    )
