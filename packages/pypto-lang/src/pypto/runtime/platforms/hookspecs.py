"""The ``pypto`` plugin hooks (pluggy project ``"pypto"``, entry-point group ``"pypto"``).

A plugin module implements the hooks with :data:`hookimpl`::

    import pluggy

    hookimpl = pluggy.HookimplMarker("pypto")

    @hookimpl
    def pypto_register_backends(register):
        register(MyBackend())
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

from pypto.ir import Backend, Target
from pypto.passes import Pass

if TYPE_CHECKING:  # the command line (click) loads only when a command runs
    import click

PROJECT = "pypto"
ENTRY_POINT_GROUP = "pypto"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def pypto_register_backends(register: Callable[[Backend], None]) -> None:
    """Register backends: call ``register(backend)`` with a ``pypto.ir.Backend`` for each."""


@hookspec
def pypto_register_targets(register: Callable[[Target], None]) -> None:
    """Register compile-only targets (a chip with no backend here): ``register(target)``."""


@hookspec
def pypto_register_passes(register: Callable[[type[Pass]], None]) -> None:
    """Register passes a pipeline may name: ``register(PassClass)``, a class with ``name``,
    ``pipeline_name`` and ``run(program, ctx)``, whose dataclass fields are its options."""


@hookspec
def pypto_register_commands(cli: click.Group) -> None:
    """Add commands to the ``pypto`` command line: ``@cli.command()`` on a function."""
