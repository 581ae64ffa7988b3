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

__path__ = extend_path(__path__, __name__)

from pypto.ir.errors import ConfigError, InternalError
from pypto.ir.errors import PyptoError as Error
from pypto.ir.log import LogLevel, get_log_level, set_log_level

__all__ = ["ConfigError", "Error", "InternalError", "LogLevel", "get_log_level", "set_log_level"]
