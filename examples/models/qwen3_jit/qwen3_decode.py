"""The decode entry that composes the rest: the tiny Qwen3 prefilled and greedily decoded on
a2a3sim, every step checked against plain torch; ``--profile`` splits a step's modeled time per
module.

    python -m examples.models.qwen3_jit.qwen3_decode [--config tiny] [--prompt-ids 1,2,3]
        [--max-new-tokens 16] [--dtype fp32|bf16] [-p a2a3sim] [--profile [DIR]]
    python examples/models/qwen3_jit/qwen3_decode.py ...   (the same)

``decode_step`` (a ``@pl.jit`` entry) embeds one token per batch row, runs ``decoder_layer`` (an
``@pl.jit.opaque`` function) once per layer — RMSNorm (``kernels/rmsnorm.py``), the q/k/v
projections (``kernels/projection.py``), attention (``kernels/attention.py``), the mixed o
projection, the MLP (``kernels/mlp.py``) — then the final norm and the LM head. The kernels are
specialised on the shapes of ``config.py``. The same implementation serves ``python -m
pypto.models.qwen3`` (and ``pypto run -m pypto.models.qwen3 --config tiny --prompt-ids 1,2,3``):
it lives in ``pypto.models.qwen3``; each file of this directory names its part and runs it alone
against torch (``python examples/models/qwen3_jit/kernels/attention.py``).
"""

import sys

from pypto.models.qwen3.cli import main as run_model
from pypto.models.qwen3.qwen3_decode import Qwen3Decoder, decode_step, decoder_layer

__all__ = ["Qwen3Decoder", "decode_step", "decoder_layer", "main"]


def main(argv: list[str] | None = None) -> None:
    """Run the model with every step checked against plain torch (prints OK)."""
    args = list(sys.argv[1:] if argv is None else argv)
    run_model([*args, "--check"] if "--check" not in args else args)


if __name__ == "__main__":
    main()
