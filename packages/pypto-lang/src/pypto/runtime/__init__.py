"""pypto.runtime — ``RunConfig``, compiling and running programs, and the platform registry.

>>> from pypto.runtime import RunConfig, run
>>> run(kernel, a, b, out, config=RunConfig(platform="a2a3sim"))  # doctest: +SKIP
"""

from pypto.runtime.compiled import CompiledProgram, compile_program, lower_program, run
from pypto.runtime.config import RunConfig
from pypto.runtime.hookspecs import hookimpl, hookspec
from pypto.runtime.registry import (
    LOAD_PLUGINS_ENV,
    PlatformRegistry,
    get_backend,
    get_target,
    list_platforms,
    register_plugin,
    registry,
    reset_registry,
)

__all__ = [
    "LOAD_PLUGINS_ENV",
    "CompiledProgram",
    "PlatformRegistry",
    "RunConfig",
    "compile_program",
    "get_backend",
    "get_target",
    "hookimpl",
    "hookspec",
    "list_platforms",
    "lower_program",
    "register_plugin",
    "registry",
    "reset_registry",
    "run",
]
