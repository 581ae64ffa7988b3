"""``pypto platforms`` and ``pypto passes``: what is installed, and what the compiler runs."""

from __future__ import annotations

import json

import click

from pypto.cli.views import table
from pypto.passes import DEFAULT_PIPELINE, PASS_REGISTRY
from pypto.runtime.registry import PlatformEntry, registry


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
def passes() -> None:
    """List the default pass pipeline in order.

    Each line is the pass's position, its name and where it is implemented (imported only when
    a program is compiled). `pypto compile --dump-passes DIR` shows the program after each one.

    \b
    Example:
      pypto passes
    """
    rows = [["#", "PASS", "IMPLEMENTATION"]]
    rows += [[str(i), name, PASS_REGISTRY[name]] for i, name in enumerate(DEFAULT_PIPELINE, start=1)]
    click.echo("\n".join(table(rows)))


COMMANDS = [platforms, passes]
