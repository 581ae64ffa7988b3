"""``pypto compile SCRIPT::KERNEL``: lower a kernel without running it and show the result."""

from __future__ import annotations

from pathlib import Path

import click

from pypto.cli.arguments import compile_arguments, parse_args
from pypto.cli.errors import ArgumentError, PyptoCommand
from pypto.cli.run_cmd import PLATFORM, check_platform
from pypto.cli.scripts import find_kernel, split_target
from pypto.cli.views import memory_map, report
from pypto.ir import Program, print_ir
from pypto.passes import PipelineError
from pypto.runtime import RunConfig, compile_program, get_target
from pypto.runtime.compiling.pipelines import command_line_start, parse_user_pipeline
from pypto.runtime.reports.profiling import check_output_dir
from pypto.runtime.settings import Origin

EMITS = ("ir", "memory-map", "report")


@click.command(name="compile", cls=PyptoCommand)
@click.argument("target", metavar="SCRIPT::KERNEL")
@click.option(
    "--arg",
    "args",
    multiple=True,
    metavar="NAME=VALUE",
    help="A parameter's dtype and shape, DTYPE[D0,D1,...] (a=fp16[128,256]), or a scalar's value "
    "(n=4, x=0.5, flag=true); repeat per parameter. Parameters not given take their full annotation.",
    show_default="each parameter's annotation",
)
@PLATFORM
@click.option(
    "--dump-passes",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Write the program after each pass to DIR/NN_after_<Pass>.py.",
    show_default="off",
)
@click.option(
    "--passes",
    metavar="PIPELINE",
    help="The passes to run, as a pipeline string: pass names (`pypto passes --all` lists them) "
    "separated by commas, each with its options in braces, e.g. "
    "'outline-scopes,tile-matmul{k_block=128},tensor-to-tile'. Quote it for the shell.",
    show_default="the pipeline the platform's backend asks for, else the default pipeline",
)
@click.option(
    "--emit",
    type=click.Choice(EMITS),
    default="ir",
    show_default=True,
    help="What to print: the lowered program, each kernel's memory map, or a compile report.",
)
def compile_kernel(
    target: str,
    args: tuple[str, ...],
    platform: str | None,
    dump_passes: Path | None,
    passes: str | None,
    emit: str,
) -> None:
    """Compile a kernel of a script without running it.

    The script is imported: its top level runs (a print, a kernel call, any work there happens),
    only its `if __name__ == "__main__":` block is skipped; a script that prints or launches a
    kernel while loaded gets a note saying so. KERNEL is looked up among its top-level names: a
    @pl.jit kernel, or a @pl.program class.
    Shapes come from full annotations or --arg (a program's from its annotations only). Each
    pass dump is itself a program: pl.parse(text) reads it back, and it runs.

    \b
    Examples:
      pypto compile examples/advanced/03_mixed_kernel.py::mixed_matmul_bias \\
        --arg a=fp16[128,256] --arg b=fp16[256,128] \\
        --arg bias=fp32[128,128] --arg out=fp32[128,128] --emit memory-map
      pypto compile examples/advanced/03_mixed_kernel.py::mixed_matmul_bias \\
        --arg a=fp16[128,256] --arg b=fp16[256,128] \\
        --arg bias=fp32[128,128] --arg out=fp32[128,128] --emit report \\
        --passes 'outline-scopes, tile-matmul{k_block=128}, tensor-to-tile, infer-memory-space,
                  vector-split, expand-mixed, stamp-tfree, allocate, task-deps'
    """
    script, name = split_target(target)
    given = parse_args(args)
    check_platform(platform)
    if passes is not None:
        check_pipeline(passes)
    if dump_passes is not None:
        check_output_dir(dump_passes, Origin("--dump-passes"), "pass dumps", "pypto_passes")
    kernel = find_kernel(script, name, programs=True)
    config = RunConfig(platform=platform, dump_passes=dump_passes or False, pipeline=passes)
    if isinstance(kernel, Program):  # a @pl.program class: its annotations fix every shape
        if given:
            raise ArgumentError(
                f"--arg: {name} is a @pl.program, whose parameters have the shapes its annotations give",
                hint="drop --arg, or change the annotations in the program",
            )
        compiled = compile_program(kernel, config)
    else:
        compiled = kernel.compile(config=config, **compile_arguments(kernel, given))
    chip = get_target(config.platform_name)
    if emit == "ir":
        click.echo(print_ir(compiled.lowered), nl=False)
    elif emit == "memory-map":
        click.echo(memory_map(compiled.lowered.functions.values(), chip))
    else:
        click.echo(report(compiled, chip))
    if dump_passes is not None:
        click.echo(f"pass dumps written to {dump_passes}", err=True)


def check_pipeline(text: str) -> None:
    """``--passes`` names known passes with usable options; else an ArgumentError that shows the
    string with a caret under the mistake."""
    try:
        parse_user_pipeline(text, command_line_start(text))
    except PipelineError as err:
        raise ArgumentError(err.message, span=err.span, hint=err.hint) from None


COMMANDS = [compile_kernel]
