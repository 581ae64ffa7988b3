"""pypto.backend — ``BackendType``, the chip family a program is compiled for, and which installed
platforms provide it.

``BackendType.Ascend910B`` is A2/A3: the platforms whose target is the ``a2a3`` chip (``a2a3``,
the compile-only target, and ``a2a3sim``, the simulator). ``BackendType.Ascend950`` is A5, which
no installed backend provides: choosing it is an :class:`UnsupportedBackendError`.

>>> from pypto.backend import BackendType
>>> platforms_of(BackendType.Ascend910B)  # ["a2a3", "a2a3sim"]  # doctest: +SKIP
"""

from pypto.ir import BackendType
from pypto.runtime.platforms.families import (
    SIMULATORS,
    UnsupportedBackendError,
    backend_type_of,
    check_supported,
    default_platform,
    platforms_of,
)

__all__ = [
    "SIMULATORS",
    "BackendType",
    "UnsupportedBackendError",
    "backend_type_of",
    "check_supported",
    "default_platform",
    "platforms_of",
]
