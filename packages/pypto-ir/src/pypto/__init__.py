"""PyPTO: the tile programming model for Ascend NPUs.

``pypto`` is shared by several distributions: ``pypto-ir`` (this file, ``pypto.ir``),
``pypto-passes`` (``pypto.passes``), ``pypto-lang`` (``pypto.language``, ``pypto.runtime``, the
``pypto`` command), ``pypto-models``. Only ``pypto-ir``, which every other one depends on, has
this ``__init__.py``; the others' ``pypto/`` directories carry none, and :func:`pkgutil.extend_path`
adds each of them found on ``sys.path`` (one site-packages after a wheel install, one ``src/`` per
package after an editable one) to this package's path.

Here: the log threshold (:func:`set_log_level`, :func:`get_log_level`, :class:`LogLevel`) and the
error types the manual names: :class:`Error`, the base of every PyPTO error, and
:class:`InternalError`, a compiler bug.

>>> import pypto
>>> pypto.set_log_level(pypto.LogLevel.DEBUG)
"""

from pkgutil import extend_path

# Every pypto/ directory on sys.path, in sys.path's order (a directory earlier on the path wins, as
# it would for a namespace package, even when this __init__.py is found in a later one), then this
# file's own directory if sys.path does not name it.
_found: list[str] = extend_path([], __name__)
__path__ = _found + [where for where in __path__ if where not in _found]

# After the path is set: pypto.ir comes from the first pypto/ directory on sys.path that has it.
from pypto.ir.errors import ConfigError, InternalError  # noqa: E402
from pypto.ir.errors import PyptoError as Error  # noqa: E402
from pypto.ir.log import LogLevel, get_log_level, set_log_level  # noqa: E402

__all__ = ["ConfigError", "Error", "InternalError", "LogLevel", "get_log_level", "set_log_level"]
