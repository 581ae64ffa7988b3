"""``pypto platforms`` and ``pypto passes``: what is installed, and what the compiler runs."""

from __future__ import annotations

import json

import click

from pypto.cli.views import table
from pypto.passes import DEFAULT_PIPELINE, PASS_REGISTRY, PassOption
from pypto.runtime.platforms.registry import PlatformEntry, registry


def _as_dict(entry: PlatformEntry) -> dict[str, str | None]:
    origin = entry.origin
    return {
        "name": entry.name,
        "kind": entry.kind,
        "chip": entry.chip,
        "plugin": origin.plugin,
        "distribution": "(in-process)" if origin.in_process else origin.distribution,
        "version": origin.version,
    }


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
def platforms(as_json: bool) -> None:
    """List the platforms that plugins provide.

    A backend runs programs; a target only compiles for its chip. PYPTO_LOAD_PLUGINS=a,b loads
    only the named entry points.

    \b
    Examples:
      pypto platforms
      pypto platforms --json
    """
    entries = [_as_dict(entry) for entry in registry().entries()]
    if as_json:
        click.echo(json.dumps(entries, indent=2))
        return
    if not entries:
        click.echo("no platform is registered: install a backend plugin (e.g. pypto-sim-a2a3)")
        return
    header = ["PLATFORM", "KIND", "CHIP", "PLUGIN", "DISTRIBUTION", "VERSION"]
    rows = [
        [e["name"], e["kind"], e["chip"], e["plugin"], e["distribution"] or "?", e["version"] or ""]
        for e in entries
    ]
    click.echo("\n".join(table([header, *rows])))


@click.command()
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="List every pass a pipeline may name, built-in and from plugins, with its pipeline name, "
    "its options and where it comes from (imports the passes and loads the plugins).",
)
def passes(every: bool) -> None:
    """List the default pass pipeline in order.

    Each line is the pass's position, its name and where it is implemented (imported only when
    a program is compiled). `pypto compile --dump-passes DIR` shows the program after each one;
    `pypto compile --passes PIPELINE` runs other passes, or these with other options.

    \b
    Examples:
      pypto passes
      pypto passes --all
    """
    if every:
        click.echo("\n".join(table([["PASS", "PIPELINE NAME", "FROM", "OPTIONS"], *_rows()])))
        return
    rows = [["#", "PASS", "IMPLEMENTATION"]]
    rows += [[str(i), name, PASS_REGISTRY[name]] for i, name in enumerate(DEFAULT_PIPELINE, start=1)]
    click.echo("\n".join(table(rows)))


def _rows() -> list[list[str]]:
    """One row per pass option (the pass's first row names it), one for a pass with none."""
    rows = []
    for entry in registry().passes().entries():
        options = [_option_text(o) for o in entry.options()] or [""]
        rows.append([entry.name, entry.pipeline_name, entry.origin, options[0]])
        rows += [["", "", text, ""] for text in options[1:]]
    return rows


def _option_text(option: PassOption) -> str:
    """``k_block: int | None = none  (the K block ...)``."""
    return f"{option.describe()}  ({option.help})" if option.help else option.describe()


COMMANDS = [platforms, passes]
