"""The Qwen3 decode path written in ``pl``, one file per module (run ``python -m
examples.models.qwen3_jit.qwen3_decode`` from the repository root). The implementation is the
package ``pypto.models.qwen3``; these files name its parts where the mixed-kernels page says to
look, so that no kernel is written twice."""
