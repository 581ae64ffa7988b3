"""Which passes a pipeline may name: the built-in ones, and those a front end adds (a plugin's).

A pass class declares its two names as class attributes: ``name`` (``AutoTileMatmul``, as in the
dump files ``NN_after_AutoTileMatmul.py``) and ``pipeline_name`` (``tile-matmul``, as a pipeline
string writes it); a pipeline may use either. The built-in passes are declared here lightly, by
those names and ``"module:Class"``, so that listing them imports nothing; a test checks each
declaration against its class.

>>> PassRegistry().find("tile-matmul").name
'AutoTileMatmul'
>>> registry = PassRegistry()
>>> registry.register(MyPass, origin="plugin 'mine'")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Any

from pypto.ir import PyptoError
from pypto.passes.options import PassOption, pass_options

BUILT_IN = "pypto-passes"  # the origin of the built-in passes
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a dump file name carries it
_PIPELINE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class PassEntry:
    """A pass a pipeline may name: its ``name``, its ``pipeline_name``, its class (or the
    ``"module:Class"`` that holds it, imported when first needed) and who registered it."""

    name: str
    pipeline_name: str
    implementation: str | type
    origin: str = BUILT_IN

    def load(self) -> type:
        """The pass class (importing its module for a built-in pass)."""
        if isinstance(self.implementation, type):
            return self.implementation
        module, cls = self.implementation.split(":")
        loaded: type = getattr(importlib.import_module(module), cls)
        return loaded

    def options(self) -> tuple[PassOption, ...]:
        """The pass's options (the fields of its dataclass), typed."""
        return pass_options(self.load())

    @property
    def where(self) -> str:
        """``pypto.passes.autotile:AutoTileMatmul``: where the class is implemented."""
        if isinstance(self.implementation, str):
            return self.implementation
        return f"{self.implementation.__module__}:{self.implementation.__qualname__}"


# The built-in passes, in the order of the default pipeline: (name, pipeline name, "module:Class").
BUILT_IN_PASSES: tuple[PassEntry, ...] = tuple(
    PassEntry(name, pipeline_name, f"pypto.passes.{module}:{name}")
    for name, pipeline_name, module in (
        ("OutlineScopes", "outline-scopes", "outline"),
        ("AutoTileMatmul", "tile-matmul", "autotile"),
        ("ConvertTensorToTileOps", "tensor-to-tile", "tensor_to_tile"),
        ("InferTileMemorySpace", "infer-memory-space", "memory_space"),
        ("LowerAutoVectorSplit", "vector-split", "vector_split"),
        ("ExpandMixedKernel", "expand-mixed", "expand_mixed"),
        ("StampTfree", "stamp-tfree", "tfree"),
        ("AllocateMemory", "allocate", "allocate"),
        ("DeriveTaskDependencies", "task-deps", "task_deps"),
    )
)

# Pass name -> "module:Class", imported only when the pass is built (the CLI lists names cheaply).
# Tests may add a pass here for a while (``monkeypatch.setitem``); its pipeline name is then its
# name in kebab case.
PASS_REGISTRY: dict[str, str] = {entry.name: str(entry.implementation) for entry in BUILT_IN_PASSES}
PIPELINE_NAMES: dict[str, str] = {entry.name: entry.pipeline_name for entry in BUILT_IN_PASSES}
DEFAULT_PIPELINE: tuple[str, ...] = tuple(entry.name for entry in BUILT_IN_PASSES)


def kebab_case(name: str) -> str:
    """``AutoTileMatmul`` -> ``auto-tile-matmul``: the pipeline name of a pass that declares none."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", name).lower()


class PassRegistrationError(PyptoError, ValueError):
    """A pass class that cannot be registered: no usable name, or a name another pass has."""


@dataclass
class PassRegistry:
    """The built-in passes (:data:`PASS_REGISTRY`) and the ones :meth:`register` added."""

    added: dict[str, PassEntry] = field(default_factory=dict)

    def entries(self) -> list[PassEntry]:
        """Every pass, built-in ones first, in the order they were declared or registered."""
        built_in = [
            PassEntry(name, PIPELINE_NAMES.get(name) or kebab_case(name), implementation)
            for name, implementation in PASS_REGISTRY.items()
        ]
        return built_in + list(self.added.values())

    def find(self, word: str) -> PassEntry | None:
        """The pass named ``word`` (its name or its pipeline name), or None."""
        return next((e for e in self.entries() if word in (e.name, e.pipeline_name)), None)

    def words(self) -> list[str]:
        """Every name a pipeline may use for a pass: each pass's pipeline name and its name."""
        return [word for e in self.entries() for word in (e.pipeline_name, e.name)]

    def register(self, cls: Any, origin: str) -> PassEntry:
        """Add pass class ``cls`` (``origin`` says who registered it, for error messages)."""
        entry = _entry_of(cls, origin)
        for word in (entry.name, entry.pipeline_name):
            taken = self.find(word)
            if taken is not None:
                raise PassRegistrationError(
                    f"two passes are named {word!r}: {taken.name} from {taken.origin}, and "
                    f"{entry.where} from {origin}",
                    hint="give one of them another name (its name and pipeline_name class attributes)",
                )
        self.added[entry.name] = entry
        return entry


def _entry_of(cls: Any, origin: str) -> PassEntry:
    """The entry of a pass class, checked: a class with a ``run`` method, a ``name`` fit for a file
    name, a ``pipeline_name`` (default: the name in kebab case) and options of usable types."""
    what = cls.__qualname__ if isinstance(cls, type) else f"a {type(cls).__qualname__} object"
    if not isinstance(cls, type) or not callable(getattr(cls, "run", None)):
        raise PassRegistrationError(
            f"{origin} registered {what}, which is not a pass class",
            hint="register the class itself: a dataclass with a name and run(program, ctx)",
        )
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME.match(name):
        raise PassRegistrationError(
            f"pass class {what} from {origin} has no usable name (got {name!r})",
            hint='declare it as a class attribute, e.g. name: ClassVar[str] = "FuseAdds"',
        )
    pipeline_name = getattr(cls, "pipeline_name", None) or kebab_case(name)
    if not isinstance(pipeline_name, str) or not _PIPELINE_NAME.match(pipeline_name):
        raise PassRegistrationError(
            f"pass {name} from {origin} has an unusable pipeline_name {pipeline_name!r}",
            hint='use letters, digits, "-", "_" and ".", e.g. pipeline_name: ClassVar[str] = "fuse-adds"',
        )
    try:
        pass_options(cls)
    except TypeError as err:
        raise PassRegistrationError(
            f"pass {name} from {origin}: {err}", hint="annotate each option with one of those types"
        ) from None
    return PassEntry(name, pipeline_name, cls, origin)
