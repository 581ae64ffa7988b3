"""``pypto deps view FILE``: the task graph a run wrote to ``deps.json``, as text, SVG or HTML."""

from __future__ import annotations

from pathlib import Path

import click

from pypto.cli.errors import PyptoCommand
from pypto.tools.deps_graph import FORMATS, load_deps, render


@click.group()
def deps() -> None:
    """Look at the task graph a run built (deps.json).

    A run with RunConfig(enable_dep_gen=True) writes dfx_outputs/deps.json into its output directory
    (RunConfig(save_kernels_dir=DIR), else build_output/<program>_<key>/): every task block
    with its kernel, core group and modeled start and end, and every dependency edge.

    \b
    Example:
      pypto deps view build_output/task_graph_0123abcd4567/dfx_outputs/deps.json --format html -o deps.html
    """


@deps.command(cls=PyptoCommand)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path), metavar="FILE")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="text: the tasks and their edges; svg: the graph drawn, tasks left to right by dependency "
    "depth; html: one self-contained page with the drawing and a table of the tasks.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="OUT",
    help="Write to OUT instead of standard output.",
    show_default="standard output",
)
def view(file: Path, fmt: str, output: Path | None) -> None:
    """Show the task graph of a deps.json as text, an SVG drawing or an HTML page.

    Text lists each task block (kernel, core group, modeled start and end, source line) and each
    edge: `via <tensor>` for one inferred from a tensor, `deps=` for one declared. The HTML page
    needs no network: open it in any browser.

    \b
    Examples:
      pypto deps view out/dfx_outputs/deps.json
      pypto deps view out/dfx_outputs/deps.json --format svg -o deps.svg
      pypto deps view out/dfx_outputs/deps.json --format html -o deps.html
    """
    text = render(load_deps(file), fmt)
    if output is None:
        click.echo(text)
        return
    try:
        output.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")
    except OSError as err:
        raise click.FileError(str(output), err.strerror or str(err)) from None
    click.echo(f"{fmt} written to {output}", err=True)


COMMANDS = [deps]
