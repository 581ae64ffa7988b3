"""The ``pypto`` command: run, compile and profile kernels; list platforms, passes and the cache.

``pypto --help`` lists the commands; every command has ``-h/--help``. Plugins add commands with
the ``pypto_register_commands(cli)`` hook.
"""

from pypto.cli.main import cli, main

__all__ = ["cli", "main"]
