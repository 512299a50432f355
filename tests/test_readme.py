"""The README's examples are real: each command's output and the Python script's output are what the code prints."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

from batchviz.cli import main

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, flags=re.S)


def test_each_command_shown_prints_what_the_readme_shows(capsys):
    """Every `$ batchviz ...` block: the command run now prints exactly the lines below it."""
    shown = [text for lang, text in BLOCKS if lang == "text" and text.startswith("$ batchviz ")]
    assert len(shown) == 5
    for text in shown:
        command, _, expected = text.partition("\n")
        assert main(shlex.split(command)[2:]) == 0
        assert capsys.readouterr().out == expected, command


def test_the_python_script_prints_what_the_readme_shows():
    """The README's Python block, run as a script, prints the block that follows it."""
    index = next(k for k, (lang, _) in enumerate(BLOCKS) if lang == "python")
    script, (_, expected) = BLOCKS[index][1], BLOCKS[index + 1]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(script, "README.md", "exec"), {})
    assert out.getvalue() == expected


def test_the_docs_the_readme_links_exist():
    """Every docs/ page the README names is there."""
    root = Path(__file__).resolve().parents[1]
    for link in re.findall(r"\]\((docs/[\w.-]+\.md)\)", README):
        assert (root / link).is_file(), link


def test_a_newcomer_runs_the_command_line_as_the_readme_says():
    """After the setup, the README's bash block (activate, then `batchviz ...`) and `./dev batchviz ...` both work.

    The newcomer's first command used to fail with `batchviz: command not found` (round 4, the front door). The venv
    is this test's own, so `./dev` finds it set up instead of installing another.
    """
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    venv = Path(sys.executable).parent.parent
    block = next(text for lang, text in BLOCKS if lang == "bash" and "source .venv/bin/activate" in text)
    script = block.replace("source .venv/bin/activate", f"source {shlex.quote(str(venv))}/bin/activate")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = "/usr/bin:/bin"  # a fresh shell: no batchviz on the PATH until the venv is activated
    without = subprocess.run(["bash", "-c", "batchviz --help"], cwd=root, env=env, capture_output=True, text=True)
    assert without.returncode == 127  # what the newcomer met: the command is only in the venv
    expected = next(text for lang, text in BLOCKS if lang == "text" and "--policy static" in text.split("\n")[0])
    expected = expected.partition("\n")[2]
    activated = subprocess.run(["bash", "-c", script], cwd=root, env=env, capture_output=True, text=True)
    assert activated.returncode == 0, activated.stderr[-500:]
    assert activated.stdout == expected
    command = block.strip().splitlines()[-1].split()
    prefixed = subprocess.run(["./dev", *command], cwd=root, env={**env, "VENV": str(venv)}, capture_output=True,
                              text=True)  # fmt: skip
    assert prefixed.returncode == 0, prefixed.stderr[-500:]
    assert prefixed.stdout == expected


def test_the_readme_image_is_the_page_as_it_opens():
    """The README shows the golden of the page opened with no address (the chapter's traffic), not another setting."""
    from tests.browser.test_goldens import OPENING

    name, _width, _height, query = OPENING
    assert query == ""
    assert f"](tests/browser/goldens/{name}.png)" in README
