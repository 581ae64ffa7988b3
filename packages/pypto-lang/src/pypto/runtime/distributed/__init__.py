"""Distributed (HOST-level) programs: ``DistributedCompiledProgram``, ``DistributedWorker`` and the
resident tensors of a world of chips (docs/distributed.md)."""
