"""``python -m pypto.cli``: the ``pypto`` command without the console script."""

from pypto.cli.main import main

main()
