"""The checks a run makes beside its numbers and its timing: races between tasks, the ordering
of cross-core global-memory traffic, accesses in modeled order, where a tensor lies in its storage.
"""
