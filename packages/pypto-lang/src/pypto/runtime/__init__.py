"""pypto.runtime — ``RunConfig``, compiling and running programs, and the platform registry.

``run`` returns what the entry returns; ``pypto.runtime.running.runner.run`` returns a ``RunResult``.

>>> from pypto.runtime import RunConfig, run
>>> run(kernel, a, b, out, config=RunConfig(platform="a2a3sim"))  # doctest: +SKIP
"""

from pypto.ir import VerificationLevel
from pypto.runtime.compiling.artifacts import ArtifactError
from pypto.runtime.compiling.compiled import CompiledProgram, compile_program, lower_program, run
from pypto.runtime.compiling.tensor_spec import TensorSpec, TensorSpecError
from pypto.runtime.config import RunConfig, UnknownOptionError
from pypto.runtime.distributed.compiled import DistributedCompiledProgram
from pypto.runtime.distributed.tensors import StackedDeviceTensor
from pypto.runtime.distributed.worker import DistributedRunHandle, DistributedWorker
from pypto.runtime.platforms.hookspecs import hookimpl, hookspec
from pypto.runtime.platforms.registry import (
    LOAD_PLUGINS_ENV,
    PlatformRegistry,
    SimulatedPlatformWarning,
    get_backend,
    get_target,
    list_platforms,
    register_plugin,
    registry,
    reset_registry,
)
from pypto.runtime.running.benchmark import BenchmarkStats, TraceInvocation, benchmark
from pypto.runtime.running.call import CallConfig, ChipCallable, OrchArgs
from pypto.runtime.running.golden import GoldenError, GoldenMismatchError, write_golden
from pypto.runtime.running.runner import RunResult
from pypto.runtime.running.worker import (
    ChipWorker,
    DeviceTensor,
    DeviceTensorError,
    Registration,
    WorkerError,
)

__all__ = [
    "LOAD_PLUGINS_ENV",
    "ArtifactError",
    "BenchmarkStats",
    "CallConfig",
    "ChipCallable",
    "ChipWorker",
    "CompiledProgram",
    "DeviceTensor",
    "DeviceTensorError",
    "DistributedCompiledProgram",
    "DistributedRunHandle",
    "DistributedWorker",
    "GoldenError",
    "GoldenMismatchError",
    "OrchArgs",
    "PlatformRegistry",
    "Registration",
    "RunConfig",
    "RunResult",
    "SimulatedPlatformWarning",
    "StackedDeviceTensor",
    "TensorSpec",
    "TensorSpecError",
    "TraceInvocation",
    "UnknownOptionError",
    "VerificationLevel",
    "WorkerError",
    "benchmark",
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
    "write_golden",
]
