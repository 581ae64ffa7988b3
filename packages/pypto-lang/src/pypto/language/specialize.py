"""Specialization: binding call arguments to a kernel's annotated parameters.

Every error here points at the parameter in the ``def`` (its name, with a caret), since that is
where the mismatched annotation or the expected argument is declared.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any

from pypto.ir import DataType, PyptoError, ScalarType, SourceSpan, SpecializationError
from pypto.ir.dtypes import holds
from pypto.ir.extents import ExtentBinding, shape_fits
from pypto.ir.extents import tensor_type as annotated_type
from pypto.ir.tracebacks import call_site
from pypto.language.annotations import ScalarSpec, TensorSpec
from pypto.language.kernel import KernelFunction
from pypto.language.parser.signature import BoundParam, ParamSignature, signature_of
from pypto.runtime.compiling.arguments import check_runnable, is_torch_tensor, scalar_value, tensor_type


def declared_strides(spec: Any) -> tuple[int, ...] | None:
    """The strides a parameter's ``pl.TensorView(stride=...)`` declares (all ints), if any."""
    view = getattr(spec, "view", None)
    stride = view.stride if view is not None else None
    if stride is None or not all(isinstance(s, int) for s in stride):
        return None
    return tuple(stride)


def check_strides(value: Any, spec: TensorSpec, name: str) -> None:
    """A tensor passed for a parameter whose ``pl.TensorView`` declares strides has those strides:
    the kernel reads and writes it through them."""
    want = declared_strides(spec)
    stride = getattr(value, "stride", None)
    if want is None or not callable(stride) or tuple(stride()) == want:
        return
    raise SpecializationError(
        f"argument '{name}' has strides {list(stride())}, but parameter '{name}' is annotated with "
        f"pl.TensorView(stride={list(want)})",
        hint="pass a view with those strides (e.g. a column window base[:, c:c + n] of a wider "
        "tensor, or torch.as_strided), or drop stride= to take any strides",
    )


@dataclass(frozen=True)
class Specialization:
    """The parameters bound for one call, and the call's arguments in parameter order."""

    params: tuple[BoundParam, ...]
    args: tuple[Any, ...] = ()

    @property
    def key(self) -> tuple[Any, ...]:
        """What selects a compiled program: each param's type, and each scalar's value."""
        return tuple((p.type, p.value) for p in self.params)

    @property
    def constants(self) -> dict[str, Any]:
        return {p.name: p.value for p in self.params if p.value is not None}


def specialize(
    kernel: KernelFunction, args: tuple[Any, ...], kwargs: dict[str, Any], running: bool = False
) -> Specialization:
    """Bind ``args`` to ``kernel``'s parameters; no arguments at all means "from the annotations".

    ``running``: the arguments are about to be run on, so tensors must hold data a kernel can read
    and write (see :func:`pypto.runtime.compiling.arguments.check_runnable`).

    >>> specialize(mixed, (a, b, bias, out), {}).key  # doctest: +SKIP
    """
    signature = signature_of(kernel)
    if not args and not kwargs and signature and not running:
        return Specialization(tuple(_from_annotation(kernel, sig) for sig in signature))
    try:
        bound = kernel.python_signature.bind(*args, **kwargs)
    except TypeError as exc:
        names = ", ".join(sig.name for sig in signature)
        raise SpecializationError(
            f"{kernel.name}(): {exc}",
            _arity_span(kernel, signature, str(exc), len(args)),
            f"{kernel.name} takes ({names})",
        ) from None
    bound.apply_defaults()
    values = tuple(bound.arguments[sig.name] for sig in signature)
    params = []
    _check_extents(signature, values)
    for sig, value in zip(signature, values, strict=True):
        try:
            param = _bind(sig, value)
            if running:
                check_runnable(value, param.direction, sig.name, declared_strides(sig.spec))
        except PyptoError as err:
            raise err.with_span(sig.span) from None
        params.append(param)
    return Specialization(tuple(params), values)


def _arity_span(
    kernel: KernelFunction, signature: tuple[ParamSignature, ...], message: str, given: int
) -> SourceSpan:
    """Where an arity error points: the parameter named in ``message`` (missing, or given twice),
    the first parameter left without a positional argument, or else the ``def``."""
    by_name = {sig.name: sig.span for sig in signature}
    named = re.search(r"'(\w+)'", message)
    if named and named.group(1) in by_name:
        return by_name[named.group(1)]
    if "unexpected keyword" in message:  # no parameter to point at: the call that passed it
        return call_site() or kernel.source.span(kernel.source.tree)
    if "too many" in message and signature:
        return signature[-1].span
    if given < len(signature):
        return signature[given].span
    return kernel.source.span(kernel.source.tree)


def _from_annotation(kernel: KernelFunction, sig: ParamSignature) -> BoundParam:
    spec = sig.spec
    if isinstance(spec, ScalarSpec):
        default = kernel.python_signature.parameters[sig.name].default
        if default is not inspect.Parameter.empty:
            return _bind(sig, default)
        return BoundParam(sig.name, ScalarType(spec.dtype), span=sig.span)
    if not isinstance(spec, TensorSpec) or spec.shape is None or spec.dtype is None:
        raise SpecializationError(
            f"parameter '{sig.name}' is annotated {spec}, which fixes no shape and dtype",
            sig.span,
            "pass the tensors (the shapes come from them), or annotate the shape and dtype",
        )
    t = annotated_type(spec.shape, spec.dtype)
    if spec.distributed:
        t = spec.type_of(t.shape, t.dtype)
    return BoundParam(sig.name, t, spec.direction, span=sig.span, view=spec.view)


def _bind(sig: ParamSignature, value: Any) -> BoundParam:
    spec = sig.spec
    if isinstance(spec, ScalarSpec):
        constant = scalar_value(value, spec.dtype, sig.name)
        return BoundParam(sig.name, ScalarType(spec.dtype), value=constant, span=sig.span)
    if not isinstance(spec, TensorSpec):
        raise SpecializationError(
            f"parameter '{sig.name}' has an unsupported annotation",
            sig.span,
            "annotate it as pl.Tensor[...], pl.Out[...], pl.InOut[...] or a scalar dtype",
        )
    # (a stand-in such as pl.Tensor[[16, 64], pl.INT4], given to parse or lower, needs no torch dtype)
    if spec.dtype is not None and not spec.dtype.has_torch_dtype and is_torch_tensor(value):
        packed = " (a 4-bit format, packed two to a byte)" if spec.dtype.packed else ""
        raise SpecializationError(
            f"parameter '{sig.name}' is annotated {spec}, and no torch tensor holds pl.{spec.dtype.name} "
            f"elements{packed}",
            sig.span,
            "a2a3 kernels take no tensor of it: pass the bytes as a pl.UINT8 tensor and annotate it so",
        )
    actual = tensor_type(value, sig.name)
    shape = spec.shape_for(actual.shape)
    fits = shape_fits(actual.shape, annotated_type(shape, actual.dtype))
    checks = (
        ("shape", fits, list(actual.shape)),
        ("dtype", spec.dtype is None or holds(spec.dtype, actual.dtype), _dtype_text(actual.dtype)),
    )
    for what, ok, shown in checks:
        if not ok:
            raise SpecializationError(
                f"argument '{sig.name}' has {what} {shown}, but parameter '{sig.name}' is annotated {spec}",
                sig.span,
                "pass a tensor that matches the annotation, or annotate the parameter as bare pl.Tensor",
            )
    # A dynamic extent stays symbolic: it is no part of the key, the program binds it per call.
    dtype = spec.dtype or actual.dtype  # an int64 tensor passed for a pl.INDEX one is INDEX
    check_strides(value, spec, sig.name)
    t = annotated_type(shape, dtype)
    if spec.distributed:
        t = spec.type_of(t.shape, t.dtype)
    return BoundParam(sig.name, t, spec.direction, span=sig.span, view=spec.view)


def _check_extents(signature: tuple[ParamSignature, ...], values: tuple[Any, ...]) -> None:
    """The call's tensors agree on each dynamic extent they share (one ``pl.dynamic`` object is
    one extent), and each expression extent (``M * 2``) holds."""
    extents = ExtentBinding()
    for sig, value in zip(signature, values, strict=True):
        spec = sig.spec
        shape = getattr(value, "shape", None)
        if not isinstance(spec, TensorSpec) or shape is None:
            continue
        try:
            annotated = spec.shape_for(tuple(shape))
        except PyptoError as err:
            raise err.with_span(sig.span) from None
        if len(shape) == len(annotated):
            extents.bind(sig.name, annotated_type(annotated, DataType.FP32), tuple(shape), sig.span)
    extents.resolve()


def _dtype_text(dtype: DataType) -> str:
    """How an argument's dtype reads: the torch dtype, or the pl one a stand-in gives."""
    return f"torch.{dtype.torch_name}" if dtype.has_torch_dtype else f"pl.{dtype.name}"
