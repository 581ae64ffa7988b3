"""``TensorSpec``: how a host program describes one argument tensor of a run — its name, shape,
dtype, how it starts (``init_value``) and whether the run writes it (``is_output``).

>>> spec = TensorSpec("x", [16, 64], torch.float32, init_value=torch.randn)
>>> spec.create_tensor().shape
torch.Size([16, 64])
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pypto.ir import PyptoError

if TYPE_CHECKING:
    import torch

__all__ = ["TensorSpec", "TensorSpecError"]


class TensorSpecError(PyptoError, ValueError):
    """A ``TensorSpec`` whose ``init_value`` cannot make its tensor."""


@dataclass
class TensorSpec:
    """One argument tensor of a run.

    ``init_value`` is what the tensor starts as: None (zeros), a number (every element), a tensor
    (its values, converted to ``dtype``), a function of no arguments that returns one of those,
    or a factory called with the shape and ``dtype=`` (``torch.randn``, ``torch.ones``).
    ``is_output``: the run writes it; a program called without it allocates and returns it.
    """

    name: str
    shape: Sequence[int]
    dtype: torch.dtype
    init_value: Any = None
    is_output: bool = False
    shape_tuple: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.shape_tuple = tuple(int(n) for n in self.shape)
        if any(n < 0 for n in self.shape_tuple):
            raise TensorSpecError(
                f"TensorSpec {self.name!r}: shape {list(self.shape_tuple)} has a negative extent",
                hint="give each dim a size of 0 or more",
            )

    def create_tensor(self) -> torch.Tensor:
        """A new tensor of this spec's shape and dtype, holding its initial value."""
        import torch  # importing pypto.runtime loads no torch

        value = self.init_value
        if value is None:
            return torch.zeros(self.shape_tuple, dtype=self.dtype)
        if callable(value) and not isinstance(value, torch.Tensor):
            value = self._called(value)
        if isinstance(value, (int, float, bool)):
            return torch.full(self.shape_tuple, value, dtype=self.dtype)
        if isinstance(value, torch.Tensor):
            if value.numel() != _count(self.shape_tuple):
                raise TensorSpecError(
                    f"TensorSpec {self.name!r}: init_value has {value.numel()} elements, but shape "
                    f"{list(self.shape_tuple)} holds {_count(self.shape_tuple)}",
                    hint="give init_value the spec's shape (or as many elements)",
                )
            return value.detach().reshape(self.shape_tuple).to(self.dtype).clone()
        raise TensorSpecError(
            f"TensorSpec {self.name!r}: init_value is a {type(value).__name__}, not a number, a "
            "tensor or a function making one",
            hint="pass a number, a torch tensor, torch.randn (or another factory), or a function",
        )

    def _called(self, make: Callable[..., Any]) -> Any:
        """The value ``make`` gives: called with no arguments when it takes none, else as a torch
        factory, with the shape and ``dtype=``."""
        try:
            takes_none = not any(
                p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                for p in inspect.signature(make).parameters.values()
            )
        except (TypeError, ValueError):  # a builtin factory without a signature: torch.randn
            takes_none = False
        if takes_none:
            return make()
        try:
            return make(self.shape_tuple, dtype=self.dtype)
        except TypeError:
            return make(self.shape_tuple)


def _count(shape: tuple[int, ...]) -> int:
    total = 1
    for n in shape:
        total *= n
    return total
