"""The hook that registers ``torchref``, loaded through the ``pypto`` entry point."""

from __future__ import annotations

from collections.abc import Callable

import pluggy

from pypto.ir import Backend
from pypto_backend_torchref.backend import TorchRefBackend

hookimpl = pluggy.HookimplMarker("pypto")


@hookimpl
def pypto_register_backends(register: Callable[[Backend], None]) -> None:
    """Register the ``torchref`` backend."""
    register(TorchRefBackend())
