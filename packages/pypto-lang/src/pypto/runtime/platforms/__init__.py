"""Choosing where a program runs: the platform registry, its plugins (pluggy hooks, entry points)
and the backends and targets they register."""
