"""Compiling: lowering a program through a platform's pass pipeline into a ``CompiledProgram``,
the on-disk cache of lowered programs, the artifacts written beside them, and the checks of the
arguments a compiled program is called with."""
