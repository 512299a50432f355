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
    assert len(shown) == 4
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
