"""A plain install (`pip install .`, not editable) serves and exports the page from another folder.

Everything the app reads at run time must be inside its packages: here nothing of the checkout is on the path. The
install is offline: a fresh virtual environment without pip, the build backend and the dependencies (panel, bokeh,
numpy) seen through a .pth file naming this interpreter's site-packages folders. A .pth file's folders are added to
the path but their own .pth files are not run, so the checkout's editable install does not follow them in.
"""

import json
import os
import re
import shutil
import site
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from app.web.bundle import IMPORT
from deploy.local import free_port, stop_group

REPO = Path(__file__).resolve().parents[1]
# The serve must answer within this many seconds of the export's end (it starts before the export, beside it).
SERVE_WAIT_S = 60


def _packages() -> list[str]:
    """Return the top-level packages pyproject.toml installs (`[tool.setuptools.packages.find] include`)."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r"^\[tool\.setuptools\.packages\.find\]\s*include\s*=\s*\[([^\]]*)\]", text, re.MULTILINE)
    assert found, "pyproject.toml names its packages in [tool.setuptools.packages.find] include"
    return [name.strip().strip("\"'").rstrip("*") for name in found.group(1).split(",") if name.strip()]


def _env() -> dict:
    """Return this environment without what would put the checkout (or another install) on the path."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH", "VIRTUAL_ENV"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PIP_")}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}


def _dependency_dirs() -> list[str]:
    """Return the folders this interpreter finds its installed packages in (panel, bokeh, numpy, setuptools, pip)."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if Path(d).is_dir()]


def _installed(venv: Path, folder: str) -> Path:
    """Return `folder` (a package's, e.g. app/web) in the environment's site-packages."""
    (found,) = (venv / "lib").glob(f"python*/site-packages/{folder}")
    return found


def _run(argv: list, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{argv[:3]} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """Return a fresh virtual environment with batchviz installed by `pip install .` (no deps, no build isolation).

    From a copy of what the build reads: pip builds in the source folder, so built from the checkout it would leave a
    build/ folder there, whose stale modules a later build would install.
    """
    root = tmp_path_factory.mktemp("install")
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for package in _packages():
        shutil.copytree(REPO / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root, 60)
    python = venv / "bin" / "python"
    code = "import sysconfig; print(sysconfig.get_path('purelib'))"
    purelib = Path(_run([python, "-c", code], root, 30).stdout.strip())
    (purelib / "_batchviz_test_deps.pth").write_text("".join(d + "\n" for d in _dependency_dirs()), encoding="utf-8")
    pip = [python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", str(src)]
    _run(pip, root, 120)
    return venv


@pytest.fixture()
def elsewhere(tmp_path) -> Path:
    """Return an empty folder outside the checkout to run the installed commands in."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


def test_the_installed_packages_are_imported_not_the_checkout(venv, elsewhere):
    """Every package, and the page's web assets, load from the new environment; the checkout is not on the path."""
    code = (
        "import json, sys, app, batchviz, core, replay, app.web.bundle as web;"
        "print(json.dumps({'files': [m.__file__ for m in (app, batchviz, core, replay)],"
        " 'assets': str(web.ASSETS), 'path': sys.path}))"
    )
    found = json.loads(_run([venv / "bin" / "python", "-c", code], elsewhere, 60).stdout)
    for file in [*found["files"], found["assets"]]:
        assert Path(file).resolve().is_relative_to(venv.resolve()), file
    path = {Path(p).resolve() for p in found["path"] if p}
    assert REPO not in path and not any(REPO / package in path for package in _packages())


def test_serve_and_export_work_from_another_folder(venv, elsewhere):
    """`batchviz export` writes a self-contained page and `batchviz serve` answers /main, run from an empty folder.

    The server starts first and boots while the export builds (a few tens of seconds of CPU), so the two waits overlap.
    """
    port = free_port()
    log = elsewhere / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [venv / "bin" / "batchviz", "serve", "--port", str(port)],
            cwd=elsewhere,
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        # Smaller traffic than the default: the same modules and assets, a quarter less building.
        export = [venv / "bin" / "batchviz", "export", "page.html", "--requests", "2", "--window", "8"]
        _run([*export, "--arrival-window", "2"], elsewhere, 300)
        page = (elsewhere / "page.html").read_text(encoding="utf-8")
        assert page.startswith("<!DOCTYPE html>") and 'id="bv-data"' in page
        assert not re.search(r"<script\b[^>]*\bsrc=", page, re.IGNORECASE), "the page must link no script"
        web = _installed(venv, "app/web")
        renderer = (web / "renderer.js").read_text(encoding="utf-8")
        assert IMPORT.sub("", renderer) in page  # the installed renderer, inlined (its imports joined away)
        assert (web / "batchviz.css").read_text(encoding="utf-8") in page  # and the installed stylesheet
        body = _fetch_when_up(f"http://127.0.0.1:{port}/main", server, log)
        assert "<title>batchviz" in body
        assert "Traceback" not in log.read_text(encoding="utf-8"), log.read_text(encoding="utf-8")[-3000:]
    finally:
        stop_group(server)


def _fetch_when_up(url: str, server: subprocess.Popen, log: Path) -> str:
    """Return the page at `url` once the server answers 200; fail with its log if it exits or never answers."""
    deadline = time.monotonic() + SERVE_WAIT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"batchviz serve exited {server.returncode}:\n{log.read_text(encoding='utf-8')[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                if answer.status == 200:
                    return answer.read().decode("utf-8")
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail(f"{url} did not answer within {SERVE_WAIT_S} s:\n{log.read_text(encoding='utf-8')[-3000:]}")
