"""``python -m pypto``: the ``pypto`` command."""

from pypto.cli.main import main

main()
