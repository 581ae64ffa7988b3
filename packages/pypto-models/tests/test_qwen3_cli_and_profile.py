"""``python -m pypto.models.qwen3`` and the decode profile: the modeled time of a step split per
module, modeled tokens/s, the mixed projections' cube-vector overlap, and the profile files."""

import json

import pytest
import torch
from transformers import Qwen3Config as HfQwen3Config

from pypto.models.qwen3 import Qwen3Decoder, Qwen3Weights, get_config, reference
from pypto.models.qwen3.cli import main
from pypto.models.qwen3.profile import MODULES, DecodeProfile, kernel_family, module_of

TINY = get_config("tiny")


@pytest.fixture(scope="module")
def decoder():
    decoder = Qwen3Decoder(Qwen3Weights.random(TINY, seed=2), batch=2, max_seq=8)
    decoder.generate([[5, 6], [7, 8]], max_new_tokens=2)
    return decoder


def test_kernels_map_to_their_modules():
    assert [module_of(k) for k in ("o_proj_tail", "rmsnorm_1", "decode_attention", "gate_up", "lm_head")] == [
        "projections",
        "norm",
        "attention",
        "mlp",
        "lm_head",
    ]
    assert kernel_family("q_proj_tail_2") == "q_proj" and module_of("something") == "other"


def test_a_steps_profile_splits_its_modeled_time_per_module(decoder):
    report = decoder.reports[-1]
    profile = DecodeProfile.of(report, batch=2)
    assert set(profile.modules) == set(MODULES) - {"allreduce"}  # one chip: nothing to sum over ranks
    assert profile.total_cycles == report.total_cycles
    assert all(0 < cycles <= report.total_cycles for cycles in profile.modules.values())
    # The modules take turns (only q/k/v run side by side): their spans add up to about the step.
    assert 0.8 * report.total_cycles < sum(profile.modules.values()) <= 1.05 * report.total_cycles
    assert profile.tokens_per_second == pytest.approx(2 * report.clock_mhz * 1e6 / report.total_cycles)
    mixed = {m.kernel: m for m in profile.mixed}
    assert set(mixed) == {"o_proj", "gate_up", "down_proj"}
    assert all(m.cube_cycles > 0 and m.vector_cycles > 0 and m.overlap_cycles > 0 for m in mixed.values())
    text = profile.summary()
    assert "modeled tokens/s" in text and "both at once" in text
    assert all(module in text for module in profile.modules)


def test_the_profile_of_several_steps_is_their_mean(decoder):
    steps = DecodeProfile.of(decoder.reports, batch=2)
    assert steps.steps == len(decoder.reports) == 3
    assert steps.total_cycles == sum(r.total_cycles for r in decoder.reports) // 3
    with pytest.raises(ValueError, match="at least one"):
        DecodeProfile.of([], batch=1)


def test_the_command_generates_checks_against_plain_torch_and_writes_the_profile(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    status = main(
        ["--prompt-ids", "4,5", "--max-new-tokens", "3", "--dtype", "bf16", "--check", "--profile", "prof"]
    )
    out = capsys.readouterr().out
    assert status == 0 and out.splitlines()[-1] == "OK"
    assert out.splitlines()[0].startswith("tokens: 4,5,")
    for name in ("trace.json", "swimlane.png", "chip_swimlane_records.json", "summary.txt", "modules.txt"):
        assert (tmp_path / "prof" / name).is_file()
    assert "modeled tokens/s" in (tmp_path / "prof" / "modules.txt").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prompt-ids", "1,x"], "'1,x' is not a comma-separated list of token ids"),
        (["--config", "qwen3-7b"], "no Qwen3 configuration 'qwen3-7b' (did you mean 'qwen3-8b'?)"),
        (["--batch", "0"], "argument --batch: 0 is less than 1"),
        (["--prompt-ids", "1,5000"], "token ids must lie in [0, 1024), got [5000]"),
        (["--max-seq", "2"], "3 prompt tokens and 16 new ones need a cache of 18 positions"),
        (["--weights", "no/such.safetensors"], "no .safetensors file at no/such.safetensors"),
    ],
)
def test_the_command_refuses_what_does_not_fit_with_a_usage_error(args, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_the_command_reads_a_checkpoints_own_configuration(tmp_path, capsys):
    Qwen3Weights.random(TINY, seed=4).save_safetensors(tmp_path / "model.safetensors")
    (tmp_path / "config.json").write_text(json.dumps(HfQwen3Config(**TINY.hf_kwargs()).to_dict()))
    assert main(["--weights", str(tmp_path), "--max-new-tokens", "1"]) == 0
    assert capsys.readouterr().out.startswith("tokens: 1,2,3,")


def test_the_plain_torch_reference_follows_the_kernels_step_for_step():
    weights = Qwen3Weights.random(TINY, seed=3)
    decoder = Qwen3Decoder(weights, batch=1, max_seq=4)
    k_cache, v_cache = decoder.k_cache.clone(), decoder.v_cache.clone()
    for token in (9, 99, 999):
        positions = decoder.positions.clone()
        logits = decoder.step([token])
        hidden, want = reference.decode_step(
            weights, torch.tensor([token]), positions, decoder.cos, decoder.sin, k_cache, v_cache
        )
        torch.testing.assert_close(logits, want, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(decoder.hidden, hidden, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(decoder.k_cache, k_cache)
