"""The docs cannot drift from the code: their marked Python blocks run, the files they cite exist,
their pictures come from a script, and the compiler page numbers the passes as ``pypto passes``.

A Python block runs when the line before its fence is a marker (see the README's Development
section): ``<!-- test: run -->`` runs it on its own, ``<!-- test: continue -->`` after the page's
marked blocks before it; ``creates=GLOB`` also checks that running it made such a file.
"""

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import matplotlib.image
import pytest
from click.testing import CliRunner

from pypto.cli import cli
from pypto.passes import BUILT_IN_PASSES

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
MARKER = re.compile(r"^<!--\s*test:\s*(?P<mode>run|continue)(?:\s+creates=(?P<creates>\S+))?\s*-->$")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TIMEOUT = 300


@dataclass(frozen=True)
class Block:
    """A marked Python block: its page, the line of its marker, its source (the page's earlier
    marked blocks first when it continues them) and the files it must create."""

    page: Path
    line: int
    source: str
    creates: str | None

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT).as_posix()}:{self.line}"


def fenced_python(lines: list[str], start: int) -> str:
    """The body of the ```python block whose fence is at ``start``."""
    assert lines[start].strip() == "```python", f"line {start + 1}: a test marker must precede ```python"
    end = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == "```")
    return "\n".join(lines[start + 1 : end]) + "\n"


def marked_blocks(page: Path) -> list[Block]:
    lines = page.read_text().splitlines()
    blocks: list[Block] = []
    session = ""
    for number, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if marker is None:
            if line.lstrip().startswith("<!--") and "test:" in line:
                raise AssertionError(f"{page}:{number + 1}: malformed test marker {line.strip()!r}")
            continue
        body = fenced_python(lines, number + 1)
        if marker["mode"] == "continue":
            assert session, f"{page}:{number + 1}: `test: continue` with no marked block before it"
            session += "\n" + body
        else:
            session = body
        blocks.append(Block(page, number + 1, session, marker["creates"]))
    return blocks


BLOCKS = [block for page in PAGES for block in marked_blocks(page)]


def test_the_pages_mark_their_runnable_blocks():
    named = {block.name.rsplit(":", 1)[0] for block in BLOCKS}
    assert {"README.md", "docs/getting-started.md"} <= named


@pytest.mark.parametrize("block", BLOCKS, ids=[block.name for block in BLOCKS])
def test_a_marked_python_block_runs(block, tmp_path):
    script = tmp_path / "block.py"  # a file: the parser reads the kernels' source from it
    script.write_text(block.source)
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=TIMEOUT
    )
    assert result.returncode == 0, f"{block.name} failed:\n{result.stderr}"
    if block.creates:
        assert list(tmp_path.glob(block.creates)), f"{block.name} made no {block.creates}"


# ---------------------------------------------------------------- cited files

TOP_LEVEL = ("examples/", "packages/", "tests/", "docs/", "benchmarks/")
CITED_FILE = re.compile(r"[\w.\-/]+\.(?:md|py|toml|txt|json|png)")
REPO_PATH = re.compile(r"(?<![\w/.])(?:examples|packages|tests|docs|benchmarks)/[\w.\-/]*[\w]")
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def cited_paths(page: Path) -> list[str]:
    """Paths the page names: link targets, `code` that looks like a repo file or directory, and
    repo paths in its code blocks (commands such as `python examples/...`)."""
    text = page.read_text()
    fences = re.findall(r"```.*?```", text, flags=re.DOTALL)
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    found = [m["target"].split("#")[0] for m in LINK.finditer(prose)]
    found = [target for target in found if target and not re.match(r"[a-z]+:", target)]
    for code in re.findall(r"`([^`\s]+)`", prose):
        if "<" in code:
            continue  # a pattern such as DIR/NN_after_<Pass>.py
        if code.startswith(TOP_LEVEL) or (
            CITED_FILE.fullmatch(code) and ("/" in code or code.endswith(".md"))
        ):
            found.append(code)
    for fence in fences:
        found += REPO_PATH.findall(fence)
    return found


def resolves(page: Path, cited: str) -> bool:
    """A citation resolves against the page, the repo root, or a package's sources (the docs
    name modules as `pypto_sim_a2a3/cost.py`)."""
    bases = [page.parent, ROOT, *sorted((ROOT / "packages").glob("*/src"))]
    return any((base / cited).exists() for base in bases)


def test_a_citation_that_names_no_file_is_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("See `platform-a2a3.md`, [this](nowhere.md) and `examples/nosuch.py`.\n")
    assert [cited for cited in cited_paths(page) if not resolves(page, cited)] == [
        "nowhere.md",
        "platform-a2a3.md",
        "examples/nosuch.py",
    ]


@pytest.mark.parametrize("page", PAGES, ids=[page.relative_to(ROOT).as_posix() for page in PAGES])
def test_every_file_a_page_cites_is_in_the_repo(page):
    missing = [cited for cited in cited_paths(page) if not resolves(page, cited)]
    assert missing == []


# ---------------------------------------------------------------- the pass numbers


def test_the_compiler_page_numbers_the_passes_as_pypto_passes_does():
    listed = CliRunner().invoke(cli, ["passes"]).output.splitlines()[1:]
    from_command = [tuple(line.split()[:2]) for line in listed]
    table = re.findall(r"^\| (\S+) \| `(\w+)` \|", (DOCS / "compiler.md").read_text(), re.MULTILINE)
    assert table == from_command


# ---------------------------------------------------------------- the pictures


def test_the_images_script_draws_every_image_of_the_docs(tmp_path):
    result = subprocess.run(
        [sys.executable, str(DOCS / "images" / "make_images.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    drawn = sorted(path.name for path in tmp_path.iterdir())
    assert drawn == sorted(path.name for path in (DOCS / "images").glob("*.png"))
    for name in drawn:
        assert (tmp_path / name).read_bytes()[:8] == PNG_SIGNATURE
        height, width, _ = matplotlib.image.imread(tmp_path / name).shape
        assert width > 800 and height > 200


def test_every_image_a_page_shows_is_drawn_by_the_script():
    shown = {
        Path(target).name
        for page in PAGES
        for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text())
    }
    assert shown and shown <= {path.name for path in (DOCS / "images").glob("*.png")}


def test_the_compiler_page_gives_each_pass_its_pipeline_name_and_options():
    text = (DOCS / "compiler.md").read_text()
    named = re.findall(r"^\| \d \| `(\w+)` \| `([\w-]+)` \|", text, re.MULTILINE)
    assert named == [(entry.name, entry.pipeline_name) for entry in BUILT_IN_PASSES]
    documented = re.findall(r"^\| `([\w-]+)` \| `([^`]+)` \|", text, re.MULTILINE)
    options = [
        (entry.pipeline_name, option.describe().replace("|", "\\|"))
        for entry in BUILT_IN_PASSES
        for option in entry.options()
    ]
    assert documented == options
