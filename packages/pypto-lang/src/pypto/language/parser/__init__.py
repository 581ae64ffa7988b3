"""The kernel parser: Python AST of ``@pl.jit`` functions -> ``pypto.ir`` (Contract 1 of docs/ir.md).

Entry point: :func:`pypto.language.parser.program.parse_program`. This package ``__init__`` stays
empty so that its modules can be imported one by one without cycles.
"""
