"""The ``pypto`` Click group: its commands, the plugin commands, and how errors are shown."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from pypto.cli import cache_cmd, compile_cmd, deps_cmd, info_cmd, run_cmd, settings_cmd, tune_cmd
from pypto.ir import PyptoError, log
from pypto.runtime.compiling.cache import CacheWarning
from pypto.runtime.platforms.registry import PlatformRegistry, PluginWarning, registry
from pypto.tuning.sweep import TuneWarning

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
# Warnings about pypto's own settings and files: their place in pypto's source says nothing.
OWN_WARNINGS = (PluginWarning, CacheWarning, TuneWarning)


@contextmanager
def _own_warnings_as_messages() -> Iterator[None]:
    """Show pypto's own warnings as ``pypto: PluginWarning: ...`` lines on standard error; every
    other warning (a script's) keeps Python's form."""
    python_form = warnings.showwarning

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if not log.shows_warning(category):  # pypto's own, under a threshold quieter than WARN
            return
        if issubclass(category, OWN_WARNINGS):
            click.echo(f"pypto: {category.__name__}: {message}", err=True)
        else:
            python_form(message, category, *args, **kwargs)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = python_form


class PyptoGroup(click.Group):
    """A Click group that adds the commands of ``pypto`` plugins and shows a ``PyptoError`` as an
    error message (``file:line:col``, the source line, a hint) instead of a traceback."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded_for: PlatformRegistry | None = None
        self._plugin_commands: set[str] = set()

    def _load_plugin_commands(self) -> None:
        try:
            current = registry()
        except PyptoError as err:
            click.echo(f"pypto: warning: plugin commands not loaded: {err.message}", err=True)
            return
        if current is self._loaded_for:
            return
        for name in self._plugin_commands:
            self.commands.pop(name, None)
        before = set(self.commands)
        current.register_commands(self)
        self._plugin_commands = set(self.commands) - before
        self._loaded_for = current

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugin_commands()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands or cmd_name in self._plugin_commands:
            self._load_plugin_commands()
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PyptoError as err:
            raise click.ClickException(err.render()) from None

    def main(self, *args: Any, **kwargs: Any) -> Any:
        with _own_warnings_as_messages():
            return super().main(*args, **kwargs)


EPILOG = (
    "Environment settings (`pypto settings` shows each one's value, where it came from and what it "
    f"does): {', '.join(settings_cmd.NAMES)}. Each is a default: an option here, or an argument or "
    "RunConfig field in code, beats it."
)


@click.group(name="pypto", cls=PyptoGroup, context_settings=CONTEXT, epilog=EPILOG)
@click.version_option(package_name="pypto-lang", prog_name="pypto", message="%(prog)s %(version)s")
def cli() -> None:
    """PyPTO: compile, run, profile and tune tile kernels for Ascend NPUs.

    Settings come from the command line, then the environment (the PYPTO_* variables below),
    then [tool.pypto] in the nearest pyproject.toml, then the built-in defaults.

    \b
    Example:
      pypto run examples/advanced/03_mixed_kernel.py
    """


for module in (run_cmd, compile_cmd, tune_cmd, deps_cmd, info_cmd, cache_cmd, settings_cmd):
    for command in module.COMMANDS:
        cli.add_command(command)


def main() -> None:
    """The console script ``pypto``."""
    cli(prog_name="pypto")
