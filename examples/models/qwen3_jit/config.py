"""Shapes and dtypes the kernels are specialised on: the named Qwen3 configurations (``tiny`` for
tests, the published shapes of Qwen3-0.6B, 8B and 32B), written in
``packages/pypto-models/src/pypto/models/qwen3/config.py``.

    python examples/models/qwen3_jit/config.py

lists them, with the parameter count their shapes give (checked against the size in each name).
"""

from pypto.models.qwen3.config import CONFIGS, Qwen3Config, get_config

__all__ = ["CONFIGS", "Qwen3Config", "get_config", "main"]
PUBLISHED_BILLIONS = {"qwen3-0.6b": 0.6, "qwen3-8b": 8.2, "qwen3-32b": 32.8}


def parameters(config: Qwen3Config) -> int:
    """The parameter count of a configuration's shapes (embedding, layers, final norm, LM head)."""
    hidden, dim = config.hidden_size, config.head_dim
    q, kv = config.num_heads * dim, config.num_kv_heads * dim
    attention = hidden * q + 2 * hidden * kv + q * hidden + 2 * dim
    layer = attention + 3 * hidden * config.intermediate_size + 2 * hidden
    vocab = config.vocab_size * hidden * (1 if config.tie_word_embeddings else 2)
    return config.num_layers * layer + vocab + hidden


def main() -> None:
    columns = (
        ("layers", 6),
        ("hidden", 6),
        ("heads/kv", 8),
        ("dim", 4),
        ("inter", 6),
        ("vocab", 7),
        ("params", 8),
    )
    print(f"{'name':<11} " + " ".join(f"{title:>{width}}" for title, width in columns))
    for name, config in CONFIGS.items():
        count = parameters(config)
        heads = f"{config.num_heads}/{config.num_kv_heads}"
        print(
            f"{name:<11} {config.num_layers:>6} {config.hidden_size:>6} {heads:>8} {config.head_dim:>4} "
            f"{config.intermediate_size:>6} {config.vocab_size:>7} {count / 1e9:>7.2f}B"
        )
        if name in PUBLISHED_BILLIONS:
            assert abs(count / 1e9 - PUBLISHED_BILLIONS[name]) / PUBLISHED_BILLIONS[name] < 0.05, name
    assert get_config("Qwen3-32B") is CONFIGS["qwen3-32b"]
    print("OK")


if __name__ == "__main__":
    main()
