"""pluggy hooks that register the a2a3sim backend and the a2a3 target with PyPTO.

Loaded through the ``pypto`` entry-point group (``a2a3sim = "pypto_sim_a2a3.plugin"``), the same
way any third-party platform plugin is.
"""

from __future__ import annotations

from collections.abc import Callable

import pluggy

from pypto.ir import Backend, Target
from pypto_sim_a2a3.backend import A2A3SimBackend
from pypto_sim_a2a3.target import A2A3_TARGET

hookimpl = pluggy.HookimplMarker("pypto")


@hookimpl
def pypto_register_backends(register: Callable[[Backend], None]) -> None:
    """Register the ``a2a3sim`` backend: ``register(A2A3SimBackend())``."""
    register(A2A3SimBackend())


@hookimpl
def pypto_register_targets(register: Callable[[Target], None]) -> None:
    """Register the ``a2a3`` target description: ``register(A2A3_TARGET)``."""
    register(A2A3_TARGET)
