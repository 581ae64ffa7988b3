"""``--arg name=fp16[128,256]``: the shapes and scalars ``pypto compile`` specializes a kernel for."""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any

import click
import torch

from pypto.ir import DataType
from pypto.language.annotations import ScalarSpec, TensorSpec
from pypto.language.jit import JitFunction

_TENSOR = re.compile(r"^(?P<dtype>[A-Za-z0-9]+)\[(?P<shape>[0-9,\s]*)\]$")
_BOOLS = {"true": True, "false": False}


def _dtype(name: str) -> DataType:
    try:
        return DataType[name.upper()]
    except KeyError:
        known = ", ".join(d.name.lower() for d in DataType if d is not DataType.INDEX)
        raise click.BadParameter(f"unknown dtype {name!r}; dtypes: {known}", param_hint="--arg") from None


def tensor_stand_in(dtype: DataType, shape: Sequence[int]) -> torch.Tensor:
    """A tensor with no storage (torch's meta device) that carries a shape and a dtype."""
    return torch.empty(tuple(shape), dtype=getattr(torch, dtype.torch_name), device="meta")


def parse_value(text: str) -> Any:
    """``fp16[128,256]`` -> a stand-in tensor; ``4``, ``0.5``, ``true`` -> a Python scalar."""
    match = _TENSOR.match(text.strip())
    if match:
        dims = [d.strip() for d in match["shape"].split(",") if d.strip()]
        return tensor_stand_in(_dtype(match["dtype"]), [int(d) for d in dims])
    if text.strip().lower() in _BOOLS:
        return _BOOLS[text.strip().lower()]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    raise click.BadParameter(
        f"{text!r} is neither a tensor like fp16[128,256] nor a number", param_hint="--arg"
    )


def parse_args(pairs: Sequence[str]) -> dict[str, Any]:
    """``["a=fp16[128,256]", "n=4"]`` -> ``{"a": <meta tensor>, "n": 4}``."""
    values: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name.strip().isidentifier():
            raise click.BadParameter(f"{pair!r} is not NAME=VALUE, e.g. a=fp16[128,256]", param_hint="--arg")
        values[name.strip()] = parse_value(text)
    return values


def compile_arguments(kernel: JitFunction, given: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments to compile ``kernel`` with: none when ``--arg`` gave nothing and every
    tensor parameter is fully annotated (scalars then stay run-time values), else one per parameter.
    """
    if not given and all(_fixed(sig.spec) for sig in kernel.signature):
        return {}
    return call_arguments(kernel, given)


def _fixed(spec: Any) -> bool:
    return not isinstance(spec, TensorSpec) or (spec.shape is not None and spec.dtype is not None)


def call_arguments(kernel: JitFunction, given: dict[str, Any]) -> dict[str, Any]:
    """One value per parameter: the ``--arg`` given, else one made from a full annotation."""
    names = [sig.name for sig in kernel.signature]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise click.BadParameter(
            f"{kernel.name} has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters: {', '.join(names)}",
            param_hint="--arg",
        )
    return {
        sig.name: given[sig.name] if sig.name in given else _annotated(kernel, sig)
        for sig in kernel.signature
    }


def _annotated(kernel: JitFunction, sig: Any) -> Any:
    spec = sig.spec
    if isinstance(spec, TensorSpec) and _fixed(spec):
        assert spec.dtype is not None and spec.shape is not None
        return tensor_stand_in(spec.dtype, spec.shape)
    if isinstance(spec, ScalarSpec):
        default = inspect.signature(kernel.func).parameters[sig.name].default
        if default is not inspect.Parameter.empty:
            return default
    example = "fp16[128,256]" if isinstance(spec, TensorSpec) else "4"
    raise click.BadParameter(
        f"parameter {sig.name!r} of {kernel.name} is annotated {spec}, which fixes no value to compile for",
        param_hint=f"--arg {sig.name}={example}",
    )
