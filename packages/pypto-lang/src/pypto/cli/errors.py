"""How the ``pypto`` command shows errors: a bad argument as a usage error, any other
``PyptoError`` as its message, source line and hint, never as a traceback."""

from __future__ import annotations

from typing import Any

import click

from pypto.ir import PyptoError


class ArgumentError(PyptoError, ValueError):
    """An argument or option of a ``pypto`` command that cannot be used; the message names it."""


class PyptoCommand(click.Command):
    """A command whose :class:`ArgumentError` is shown with its usage line (exit status 2)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ArgumentError as err:
            raise click.UsageError(err.render(), ctx) from None
