"""Programs and functions as bytes: ``pypto.ir.serialize(fn)`` and ``pypto.ir.deserialize(data)``.

The bytes are this project's own format (a short header, then a pickle of the frozen IR nodes),
not PyPTO's msgpack: they round-trip within one version of the packages, for caching a parsed or
lowered program and sending it between processes. Deserializing runs pickle, so read only bytes
you wrote yourself (as for any pickle).

>>> restored = deserialize(serialize(fn))  # doctest: +SKIP
"""

from __future__ import annotations

import pickle

from pypto.ir.errors import PyptoError
from pypto.ir.nodes import Function, Program

MAGIC = b"PYPTO-IR\x01"


class SerializationError(PyptoError, ValueError):
    """Bytes that are not a serialized program or function (or of another format version)."""


def serialize(node: Program | Function) -> bytes:
    """``node`` as bytes that :func:`deserialize` reads back into an equal node."""
    if not isinstance(node, (Program, Function)):
        raise SerializationError(
            f"serialize takes a Program or a Function, got {type(node).__name__}",
            hint="pass the result of pl.parse, @pl.program, or a compiled program's .program",
        )
    return MAGIC + pickle.dumps(node, protocol=pickle.HIGHEST_PROTOCOL)


def deserialize(data: bytes) -> Program | Function:
    """The program or function :func:`serialize` wrote as ``data``."""
    if not isinstance(data, (bytes, bytearray)) or not bytes(data).startswith(MAGIC):
        raise SerializationError(
            "the bytes are not a program or function written by pypto.ir.serialize (or come from "
            "another format version)",
            hint="serialize the node with this version of pypto.ir.serialize",
        )
    node = pickle.loads(bytes(data)[len(MAGIC) :])
    if not isinstance(node, (Program, Function)):
        raise SerializationError(
            "the bytes hold no program or function", hint="serialize a Program or Function"
        )
    return node
