"""``python -m pypto.models.qwen3``: see :mod:`pypto.models.qwen3.cli`."""

import sys

from pypto.models.qwen3.cli import main

if __name__ == "__main__":
    sys.exit(main())
