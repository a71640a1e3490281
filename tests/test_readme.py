"""The README's test command is the one CI runs."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    command = next(line for line in ci_lines if "pytest" in line)
    readme = (ROOT / "README.md").read_text()
    assert command.strip() in readme
