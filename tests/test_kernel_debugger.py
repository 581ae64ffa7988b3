"""The kernel debugger on a2a3sim: pl.debug.print, pl.debug.breakpoint, RunConfig(break_at=...),
``pypto run --break`` (interactive sessions driven through a pseudo-terminal)."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir import PyptoError
from pypto.runtime import RunConfig, hookimpl
from pypto.runtime.reports.launches import recording_launches

PROGRAMS = Path(__file__).parent / "debugger_programs"
MIXED = PROGRAMS / "mixed_debug.py"
PROMPT = b"(pypto-dbg) "


def _mixed(printing: bool):
    @pl.jit
    def mixed(
        a: pl.Tensor[[16, 64], pl.FP16],
        b: pl.Tensor[[64, 32], pl.FP16],
        bias: pl.Tensor[[16, 32], pl.FP32],
        out: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    ):
        with pl.at(
            level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mixed"
        ):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            if printing:
                pl.debug.print("acc", acc)
            y = pl.add(acc, bias)
            if printing:
                pl.debug.print("y", y)
            out[:] = y
        return out

    return mixed


def _inputs():
    torch.manual_seed(0)
    a = torch.randn(16, 64, dtype=torch.float16)
    b = torch.randn(64, 32, dtype=torch.float16)
    bias = torch.randn(16, 32, dtype=torch.float32)
    return a, b, bias, torch.zeros(16, 32, dtype=torch.float32)


def _run(kernel, args, **config):
    with recording_launches() as launches:
        kernel(*args, config=RunConfig(platform="a2a3sim", **config))
    return launches[-1].report


def _printed(text: str, core: str, label: str) -> tuple[str, torch.Tensor]:
    """The prefix line of ``core``'s print of ``label`` and the numbers it shows."""
    match = re.search(rf"^(\[{core} [^\]]*\]) {label} Tile\[[^\n]*\n((?:[^\[\n].*\n|\[\[.*\n)+)", text, re.M)
    assert match is not None, text
    numbers = [float(x) for x in re.findall(r"-?\d+\.\d+(?:e[+-]?\d+)?", match.group(2))]
    return match.group(1), torch.tensor(numbers)


def test_print_on_a_mixed_split_kernel_shows_each_core_and_each_lanes_half(capsys):
    a, b, bias, out = _inputs()
    _run(_mixed(True), (a, b, bias, out))
    text = capsys.readouterr().out
    want = a.float() @ b.float() + bias
    assert torch.allclose(out, want, rtol=1e-2, atol=1e-2)  # the prints change no number
    head, acc = _printed(text, r"cg0\.AIC", "acc")
    assert re.fullmatch(r"\[cg0\.AIC lane=- block=0 cycle=\d+\]", head)
    assert torch.allclose(acc.reshape(16, 32), a.float() @ b.float(), rtol=1e-2, atol=1e-2)
    for lane in (0, 1):
        head, y = _printed(text, rf"cg0\.AIV{lane}", "y")
        assert re.fullmatch(rf"\[cg0\.AIV{lane} lane={lane} block=0 cycle=\d+\]", head)
        half = want[8 * lane : 8 * (lane + 1)]
        assert torch.allclose(y.reshape(8, 32), half, rtol=1e-3, atol=1e-3)
    assert "Tile[8, 32] FP32 Vec valid=[8, 32]" in text


def test_prints_cost_no_modeled_time():
    plain = _run(_mixed(False), _inputs())
    printing = _run(_mixed(True), _inputs())
    assert printing.total_cycles == plain.total_cycles
    assert printing.busy_cycles == plain.busy_cycles and printing.stall_cycles == plain.stall_cycles
    assert [(t.kernel, t.start_cycle, t.end_cycle) for t in printing.tasks] == [
        (t.kernel, t.start_cycle, t.end_cycle) for t in plain.tasks
    ]
    slices = [(x.core, x.start, x.cycles) for x in printing.timeline]
    assert slices == [(x.core, x.start, x.cycles) for x in plain.timeline]


TORCHREF = Path(__file__).resolve().parent.parent / "examples" / "plugins" / "pypto-backend-torchref" / "src"


class TorchRefPlugin:
    """The torchref example backend (no kernel debugger), registered from its source tree."""

    @hookimpl
    def pypto_register_backends(self, register):
        sys.path.insert(0, str(TORCHREF))
        try:
            from pypto_backend_torchref import TorchRefBackend
        finally:
            sys.path.remove(str(TORCHREF))
        register(TorchRefBackend())


def test_a_backend_without_a_debugger_drops_the_prints_with_a_warning(monkeypatch, capsys):
    from pypto.ir.semantics import DebugOpIgnored
    from pypto.runtime import register_plugin, reset_registry

    monkeypatch.setenv("PYPTO_CACHE", "off")
    reset_registry()
    register_plugin(TorchRefPlugin(), name="torchref-source")
    try:
        a, b, bias, out = _inputs()
        with pytest.warns(DebugOpIgnored, match="debug.print at .* is ignored"):
            _mixed(True)(a, b, bias, out, config=RunConfig(platform="torchref"))
    finally:
        reset_registry()
    assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    assert "lane=" not in capsys.readouterr().out


def _blocks(printing: bool):
    @pl.jit
    def blocks(x: pl.Tensor[[64, 16], pl.FP32], out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]):
        for b in pl.spmd(4):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="blk"):
                t = pl.exp(x[b * 16 : (b + 1) * 16, :])
                if printing:
                    pl.debug.print("block", b, "t", t)
                out[b * 16 : (b + 1) * 16, :] = t
        return out

    return blocks


def test_every_block_of_an_spmd_kernel_prints_its_own_rows_at_no_cost(capsys):
    x = torch.randn(64, 16)
    plain = _run(_blocks(False), (x, torch.zeros(64, 16)))
    out = torch.zeros(64, 16)
    printing = _run(_blocks(True), (x, out))
    assert torch.allclose(out, torch.exp(x), rtol=1e-5, atol=1e-5)
    assert printing.total_cycles == plain.total_cycles and printing.busy_cycles == plain.busy_cycles
    text = capsys.readouterr().out
    for block in range(4):
        head = re.search(
            rf"^\[cg\d+\.AIV0 lane=0 block={block} cycle=\d+\] block {block} t Tile\[16, 16\]", text, re.M
        )
        assert head is not None, text
        _, shown = _printed(text[head.start() :], r"cg\d+\.AIV0", f"block {block} t")
        want = torch.exp(x[16 * block : 16 * (block + 1)])
        assert torch.allclose(shown.reshape(16, 16), want, rtol=1e-3, atol=1e-3)


def test_a_view_that_never_reaches_the_chip_is_named_so(capsys):
    @pl.jit
    def view(x: pl.Tensor[[32, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="v"):
            v = x[0:16, :]
            y = pl.exp(v)
            pl.debug.print("v", v, "y", y)
            out[:] = y
        return out

    x = torch.randn(32, 32)
    out = torch.zeros(16, 32)
    _run(view, (x, out))
    assert torch.allclose(out, torch.exp(x[:16]))
    assert re.search(r"\] v <v: not on chip here> y Tile\[16, 32\] FP32 Vec", capsys.readouterr().out)


def test_a_large_tile_is_summarised_like_torch(capsys):
    @pl.jit
    def big(x: pl.Tensor[[128, 128], pl.FP32], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="big"):
            y = pl.exp(x)
            pl.debug.print("y", y)
            out[:] = y
        return out

    x = torch.randn(128, 128)
    out = torch.zeros(128, 128)
    _run(big, (x, out))
    text = capsys.readouterr().out
    assert "..." in text and len(text.splitlines()) < 20
    assert torch.allclose(out, torch.exp(x), rtol=1e-5, atol=1e-5)


def test_print_in_the_orchestration_is_an_error_at_the_users_line():
    @pl.jit
    def host(x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        pl.debug.print("x", x)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
            out[:] = pl.exp(x)
        return out

    with pytest.raises(PyptoError, match="cannot stand in the orchestration") as info:
        host(torch.zeros(16, 16), torch.zeros(16, 16))
    assert info.value.span is not None and "pl.debug.print" in info.value.span.source_line()


@pytest.mark.parametrize("bad", ["kernel.py", "kernel.py:zero", ":3", "k.py:3@gpu0", 31])
def test_a_bad_break_at_is_an_error_with_a_hint(bad):
    with pytest.raises(PyptoError, match="break_at") as info:
        RunConfig(break_at=bad)
    assert info.value.hint


def test_a_break_at_line_without_ops_is_an_error_when_the_run_starts():
    with pytest.raises(PyptoError, match="no op of the program is on that line") as info:
        _run(_mixed(False), _inputs(), break_at=f"{Path(__file__).name}:1")
    assert "lines of" in (info.value.hint or "")


# ---------------------------------------------------------------- interactive, through a pty


class Session:
    """A child process whose stdin and stdout are a pseudo-terminal."""

    def __init__(self, argv: list[str]):
        self.master, slave = pty.openpty()
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
        os.close(slave)
        self.seen = b""

    def until(self, marker: bytes, timeout: float = 120) -> str:
        end = time.monotonic() + timeout
        while marker not in self.seen:
            left = end - time.monotonic()
            assert left > 0, self.seen.decode(errors="replace")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                self.seen += chunk
        assert marker in self.seen, self.seen.decode(errors="replace")
        before, _, self.seen = self.seen.partition(marker)
        return before.decode(errors="replace").replace("\r\n", "\n")

    def send(self, line: str) -> str:
        os.write(self.master, line.encode() + b"\n")
        return self.until(PROMPT)

    def finish(self, line: str) -> tuple[int, str]:
        os.write(self.master, line.encode() + b"\n")
        rest = b""
        while True:
            ready, _, _ = select.select([self.master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                break
            if not chunk:
                break
            rest += chunk
        return self.proc.wait(60), (self.seen + rest).decode(errors="replace")


def test_a_breakpoint_in_a_mixed_kernel_stops_each_core_and_answers_p_n_w_c_q():
    s = Session([sys.executable, str(MIXED)])
    first = s.until(PROMPT)
    assert "stopped (breakpoint)" in first and "pl.debug.breakpoint()" in first
    core = re.search(r"\[(cg0\.\w+) ", first).group(1)
    where = s.send("w")
    assert f"core {core}" in where and "->         pl.debug.breakpoint()" in where
    assert "call chain: mixed -> mixed_1 -> mixed_a" in where
    shown = s.send("p acc")
    if core == "cg0.AIC":
        assert "acc = Tile[32, 32] FP32 Acc" in shown
        assert "y is not live on cg0.AIC: it belongs to mixed_aiv (AIV)" in s.send("p y")
    else:  # the vector lanes stop before they pop acc from the cube
        assert "*** acc is not live on" in shown and "mixed_aiv binds it later" in shown
        assert "mixed_aic (AIC)" in shown
        assert "mixed_aiv binds it later" in s.send("p y")
    assert "*** no variable 'nothing'" in s.send("p nothing")
    assert "pipes" in s.send("h")
    stepped = s.send("n")
    while "stopped (step)" not in stepped:  # another core reached its breakpoint first
        assert "stopped (breakpoint)" in stepped
        stepped = s.send("c")
    assert f"[{core} " in stepped and "stopped (step)" in stepped and re.search(r"> \S+:\d+  pl\.", stepped)
    later = s.send("c")
    assert "stopped (" in later
    code, rest = s.finish("q")
    assert code == 1 and "DebuggerQuit" in rest and "the kernel debugger quit on" in rest


def test_break_at_and_pypto_run_break_stop_on_the_line(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(MIXED.read_text().replace("        pl.debug.breakpoint()\n", ""))
    line = next(n for n, text in enumerate(script.read_text().splitlines(), 1) if "y = pl.add" in text)
    pypto = [sys.executable, "-m", "pypto", "run", "--break", f"plain.py:{line}@aiv1", str(script)]
    s = Session(pypto)
    first = s.until(PROMPT)
    assert "[cg0.AIV1 lane=1" in first and f"stopped (break_at {script}:{line})" in first
    assert "y = pl.add(acc, bias)" in first
    assert "acc" in s.send("p acc")
    assert "mixed_c2v -> AIV1" in s.send("pipes")
    assert "bias: Tensor[32, 32] FP32" in s.send("locals")
    code, rest = s.finish("c")
    assert code == 0 and "DONE True" in rest

    s = Session([sys.executable, "-c", _break_at_script(script, line)])
    first = s.until(PROMPT)
    assert "stopped (break_at" in first and "[cg0.AIV" in first
    code, rest = s.finish("q")
    assert code == 1 and "DebuggerQuit" in rest


def _break_at_script(script: Path, line: int) -> str:
    return (
        f"import runpy, sys; sys.path.insert(0, {str(script.parent)!r})\n"
        "from pypto.runtime import RunConfig\n"
        "import pypto.runtime.config as c\n"
        f"m = runpy.run_path({str(script)!r})\n"
        "import torch\n"
        "a, b = torch.randn(32, 64, dtype=torch.float16), torch.randn(64, 32, dtype=torch.float16)\n"
        "bias, out = torch.randn(32, 32), torch.zeros(32, 32)\n"
        f"m['mixed'](a, b, bias, out, config=RunConfig(break_at={f'{script.name}:{line}'!r}))\n"
    )


def _shape(text: str) -> str:
    """A line with its numbers and the program's directory taken out: what a transcript keeps."""
    text = text.replace(str(PROGRAMS.parent.parent) + os.sep, "")
    return re.sub(r"-?\d+(\.\d+)?", "#", text.strip())


def test_the_documented_session_has_the_shape_of_a_real_one():
    page = (Path(__file__).parent.parent / "docs" / "debugging.md").read_text()
    transcript = page.split("$ python tests/debugger_programs/mixed_debug.py\n", 1)[1].split("```", 1)[0]
    steps = transcript.split("(pypto-dbg) ")
    s = Session([sys.executable, str(MIXED)])
    answers = [s.until(PROMPT)]
    commands = [step.split("\n", 1)[0] for step in steps[1:]]
    for command in commands[:-1]:
        answers.append(s.send(command).split("\n", 1)[1])
    code, rest = s.finish(commands[-1])
    assert code == 1 and "DebuggerQuit" in rest
    documented = [steps[0], *(step.split("\n", 1)[1] for step in steps[1:-1])]
    for written, real in zip(documented, answers, strict=True):
        assert _shape(written.splitlines()[0]) == _shape(real.splitlines()[0])


def test_pypto_run_break_on_a_line_no_kernel_has_is_an_error(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(MIXED.read_text().replace("        pl.debug.breakpoint()\n", ""))
    done = subprocess.run(
        [sys.executable, "-m", "pypto", "run", "--break", "plain.py:2", str(script)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert done.returncode == 2
    assert "--break plain.py:2: no kernel the script ran has an op on that line" in done.stderr
    assert "DONE True" in done.stdout  # the script ran to its end first
    bad = subprocess.run(
        [sys.executable, "-m", "pypto", "run", "--break", "plain.py", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "Invalid value for '--break'" in bad.stderr
