"""The fast path: later blocks of an spmd launch replayed from an earlier one, their numbers
computed together. It changes no modeled cycle, number or diagnostic (the tests compare).
"""
