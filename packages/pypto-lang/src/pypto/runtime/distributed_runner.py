"""The runtime side of a distributed run, as PyPTO's examples import it:
``_tensor_from_continuous`` turns what a HOST SubWorker callback is given into a torch tensor.

>>> def inspect_result(args):  # doctest: +SKIP
...     f = _tensor_from_continuous(args[0])
"""

from __future__ import annotations

from typing import Any

from pypto.ir import PyptoError
from pypto.ir.tracebacks import call_site
from pypto.runtime.distributed.compiled import DistributedCompiledProgram
from pypto.runtime.distributed.tensors import StackedDeviceTensor
from pypto.runtime.distributed.worker import DistributedRunHandle, DistributedWorker
from pypto.runtime.running.device import DeviceTensor


class CallbackArgumentError(PyptoError, TypeError):
    """A SubWorker callback argument that is no tensor."""


def _tensor_from_continuous(arg: Any) -> Any:
    """A SubWorker callback's argument as a torch tensor sharing its memory (no copy): a tensor as
    it is, a resident ``DeviceTensor`` / ``StackedDeviceTensor`` as its buffer, anything with
    ``__dlpack__`` or the array interface through torch; a Python number as a 0-d tensor."""
    import torch

    if isinstance(arg, torch.Tensor):
        return arg
    if isinstance(arg, (DeviceTensor, StackedDeviceTensor)):
        return arg._live()
    if isinstance(arg, (bool, int, float)):
        return torch.tensor(arg)
    if hasattr(arg, "__dlpack__"):
        return torch.from_dlpack(arg)
    if hasattr(arg, "__array_interface__") or hasattr(arg, "__array__"):
        return torch.as_tensor(arg)
    raise CallbackArgumentError(
        f"a SubWorker callback argument of type {type(arg).__name__} holds no tensor",
        call_site(),
        "pass tensors to the SubWorker call in the HOST orchestrator, or read this argument as it is",
    )


__all__ = [
    "DistributedCompiledProgram",
    "DistributedRunHandle",
    "DistributedWorker",
    "_tensor_from_continuous",
]
