"""The command ``python -m pypto.models.qwen3``: greedy generation with a Qwen3 decoding on a backend.

    python -m pypto.models.qwen3 --config tiny --prompt-ids 1,2,3 [--max-new-tokens 16]
        [--dtype fp32|bf16] [--weights PATH | --seed N] [--batch N] [--max-seq N] [-p PLATFORM]
        [--check] [--profile [DIR]]
    pypto run -m pypto.models.qwen3 --config tiny --prompt-ids 1,2,3

Weights come from a local ``.safetensors`` file or checkpoint directory (``--weights``), else
random by ``--seed``. It prints the generated token ids and the modeled time of a decode step
(per module, and as modeled tokens/s); ``--check`` also runs every step in plain torch
(:mod:`pypto.models.qwen3.reference`) and compares the logits. ``--profile`` runs one more decode
step after the generation (the last token fed back) with profiling on and writes its trace,
swimlane and summary, and the per-module split beside them (modules.txt).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

from pypto.ir import PyptoError
from pypto.models.errors import ModelError
from pypto.models.qwen3 import reference
from pypto.models.qwen3.config import CONFIGS, get_config
from pypto.models.qwen3.profile import DecodeProfile
from pypto.models.qwen3.qwen3_decode import Qwen3Decoder
from pypto.models.qwen3.weights import Qwen3Weights
from pypto.runtime import RunConfig

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def token_ids(text: str) -> list[int]:
    try:
        ids = [int(word) for word in text.split(",") if word.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of token ids") from None
    if not ids:
        raise argparse.ArgumentTypeError("give at least one token id, e.g. 1,2,3")
    return ids


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``low``."""

    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is less than {low}")
        return value

    return number


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pypto.models.qwen3",
        description="Greedy generation with Qwen3 written in pl, on a backend (a2a3sim by default).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "--config",
        help=f"named configuration: {', '.join(CONFIGS)} (default: the checkpoint's config.json, else tiny)",
    )
    p.add_argument(
        "--prompt-ids", type=token_ids, default=[1, 2, 3], help="prompt token ids, comma-separated"
    )
    p.add_argument("--max-new-tokens", type=at_least(0), default=16, help="tokens to generate")
    p.add_argument("--batch", type=at_least(1), default=1, help="batch rows, each decoding the same prompt")
    p.add_argument("--dtype", choices=DTYPES, default="fp32", help="the model's dtype")
    p.add_argument("--weights", help="a local .safetensors file or checkpoint directory (else random)")
    p.add_argument("--seed", type=at_least(0), default=0, help="seed of the random weights")
    p.add_argument(
        "--max-seq", type=at_least(1), help="KV-cache positions per row (default: prompt + new tokens)"
    )
    p.add_argument(
        "-p", "--platform", help="platform (default: the session's, e.g. `pypto run -p`; else a2a3sim)"
    )
    p.add_argument(
        "--check", action="store_true", help="compare every step's logits with plain torch; print OK"
    )
    p.add_argument(
        "--profile",
        nargs="?",
        const=True,
        default=False,
        metavar="DIR",
        help="write the last step's trace.json, swimlane.png, chip_swimlane_records.json, summary.txt "
        "and modules.txt to DIR "
        "(default: ./pypto_profile/decode_step/)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    command = parser()
    args = command.parse_args(argv)
    try:
        weights = load_weights(args)
        prompt = torch.tensor([args.prompt_ids] * args.batch)
        max_seq = args.max_seq or prompt.shape[1] + args.max_new_tokens
        decoder = Qwen3Decoder(
            weights, batch=args.batch, max_seq=max_seq, run_config=RunConfig(platform=args.platform)
        )
        if args.check:
            decoder.on_step = _checker(weights, decoder)
        tokens = decoder.generate(prompt, args.max_new_tokens)
    except ModelError as err:  # a configuration, checkpoint or argument that does not fit
        command.error(err.render())
    except PyptoError:
        raise  # a kernel's error, shown at its line
    except (
        KeyError,
        ValueError,
        ImportError,
    ) as err:  # a configuration, checkpoint or argument that does not fit
        command.error(str(err.args[0]) if isinstance(err, KeyError) else str(err))
    for row in tokens.tolist():
        print("tokens:", ",".join(str(t) for t in row))
    if args.profile:
        profile_dir = args.profile if isinstance(args.profile, str) else None
        profiled = RunConfig(platform=args.platform, enable_profiling=True, profile_dir=profile_dir)
        decoder.step(tokens[:, -1], run_config=profiled)
    profile = DecodeProfile.of(decoder.reports[-1], batch=args.batch)
    print(profile.summary())
    written = decoder.profile_dir(profiled) if args.profile else None
    if written is not None:
        (written / "modules.txt").write_text(profile.summary() + "\n")
        files = "trace.json, swimlane.png, chip_swimlane_records.json, summary.txt, modules.txt"
        print(f"profile of the last step written to {written} ({files})")
    if args.check:
        print("OK")
    return 0


def load_weights(args: argparse.Namespace) -> Qwen3Weights:
    """The weights the command line names: a local checkpoint (its ``config.json`` unless
    ``--config`` is given), else random by ``--seed`` for ``--config`` (``tiny`` by default)."""
    dtype = DTYPES[args.dtype]
    if args.weights:
        config = get_config(args.config) if args.config else None
        return Qwen3Weights.from_safetensors(args.weights, config, dtype)
    return Qwen3Weights.random(get_config(args.config or "tiny"), seed=args.seed, dtype=dtype)


def _checker(
    weights: Qwen3Weights, decoder: Qwen3Decoder
) -> Callable[[torch.Tensor, torch.Tensor, torch.Tensor], None]:
    """A step hook comparing each step's logits with the plain-torch reference's."""
    k_cache, v_cache = decoder.k_cache.clone(), decoder.v_cache.clone()
    tolerance = 1e-4 if weights.dtype is torch.float32 else 2e-2

    def check(tokens: torch.Tensor, positions: torch.Tensor, logits: torch.Tensor) -> None:
        _, want = reference.decode_step(
            weights, tokens, positions, decoder.cos, decoder.sin, k_cache, v_cache
        )
        error = float((logits - want).abs().max() / want.abs().max())
        if error > tolerance:
            raise SystemExit(
                f"step at positions {positions.tolist()}: logits differ from plain torch by {error:.2e}"
            )

    return check
