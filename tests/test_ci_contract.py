"""The repository contract: the README opens with two commands, and CI runs exactly those two inside a
brand-new virtual environment."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    return [block.strip() for block in blocks[:2]]


def test_the_readme_opens_with_install_and_test():
    install, test = readme_commands()
    assert (
        install == "python -m pip install -r requirements.txt && python examples/advanced/03_mixed_kernel.py"
    )
    assert test == "python -m pytest"


def test_ci_runs_the_readme_commands_in_a_fresh_venv():
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    venv = next(i for i, line in enumerate(script) if re.search(r"python3? -m venv ", line))
    activate = next(i for i, line in enumerate(script) if "/bin/activate" in line)
    install, test = readme_commands()
    steps = [script.index(part) for part in (*install.split(" && "), test)]
    assert venv < activate < steps[0] < steps[1] < steps[2]
