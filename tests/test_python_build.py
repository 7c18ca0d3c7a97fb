# SPDX-License-Identifier: GPL-3.0-or-later
"""The Python package (python/) as a user gets it: `python -m build` gives an sdist and a wheel
built from that sdist, both of the workspace version (Cargo.toml), holding every module and
the word lists and nothing else, and the wheel installs into a fresh venv and imports.

PARTAGPU_PYTHON names the dev venv's interpreter (scripts/test sets it): `build` and the
setuptools of python/requirements-dev.txt build without isolation. The build runs on a copy
of python/, so the checkout gets no build/ or *.egg-info. The fresh venv installs with
--no-index from the built wheel and a wheelhouse of the runtime dependencies, downloaded once
under $PARTAGPU_CACHE (the network is needed the first time only).
"""

import ast
import json
import os
import re
import shutil
import subprocess
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

PYTHON = os.environ.get("PARTAGPU_PYTHON")
needs_python = pytest.mark.skipif(not PYTHON, reason="PARTAGPU_PYTHON is not set (scripts/test sets it)")
PACKAGE_DIR = REPO / "python"
CACHE = Path(os.environ.get("PARTAGPU_CACHE", "/var/cache/partagpu-dev"))
WHEELHOUSE = CACHE / "wheelhouse-python"


def workspace_version() -> str:
    return tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]


VERSION = workspace_version()


def run(cmd, timeout=120, **kwargs):
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          env=env, **kwargs)


def package_files() -> set[str]:
    """Every file of python/partagpu (modules and data), relative to python/."""
    return {p.relative_to(PACKAGE_DIR).as_posix() for p in (PACKAGE_DIR / "partagpu").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def test_versions_agree():
    """pyproject.toml's literal and partagpu.__version__ follow the workspace version."""
    pyproject = tomllib.loads((PACKAGE_DIR / "pyproject.toml").read_text())["project"]
    assert "version" not in pyproject.get("dynamic", [])
    assert pyproject["version"] == VERSION, "python/pyproject.toml [project] version != Cargo.toml's"
    init = ast.parse((PACKAGE_DIR / "partagpu" / "__init__.py").read_text())
    literals = [node.value.value for node in init.body if isinstance(node, ast.Assign)
                and any(getattr(t, "id", None) == "__version__" for t in node.targets)
                and isinstance(node.value, ast.Constant)]
    assert literals == [VERSION], "python/partagpu/__init__.py __version__ != Cargo.toml's"


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """Runs `python -m build --no-isolation` (sdist, then the wheel from the sdist) once."""
    if not PYTHON:
        pytest.skip("PARTAGPU_PYTHON is not set (scripts/test sets it)")
    root = tmp_path_factory.mktemp("python-build")
    source = root / "src"
    shutil.copytree(PACKAGE_DIR, source, ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", "*.egg-info", "build", "dist", ".pytest_cache"))
    out = root / "dist"
    result = run([PYTHON, "-m", "build", "--no-isolation", "--outdir", out, source], cwd=source)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    return out, log


@needs_python
def test_build_gives_sdist_and_wheel_of_the_workspace_version(dist):
    out, log = dist
    assert sorted(p.name for p in out.iterdir()) == [
        f"partagpu-{VERSION}-py3-none-any.whl", f"partagpu-{VERSION}.tar.gz"]
    # Setuptools' deprecations (they become errors) and its data-folder warning.
    bad = [line for line in log.splitlines()
           if re.search(r"deprecat|absent from the .packages. configuration", line, re.I)]
    assert not bad, "\n".join(bad)
    with zipfile.ZipFile(out / f"partagpu-{VERSION}-py3-none-any.whl") as wheel:
        metadata = wheel.read(f"partagpu-{VERSION}.dist-info/METADATA").decode()
    with tarfile.open(out / f"partagpu-{VERSION}.tar.gz") as sdist:
        pkg_info = sdist.extractfile(f"partagpu-{VERSION}/PKG-INFO").read().decode()
    for text in (metadata, pkg_info):
        assert f"\nVersion: {VERSION}\n" in text
        assert "\nLicense-Expression: GPL-3.0-or-later\n" in text
        assert "\nRequires-Dist: spake2==0.9\n" in text


@needs_python
def test_wheel_holds_every_module_and_the_word_lists(dist):
    out, _ = dist
    with zipfile.ZipFile(out / f"partagpu-{VERSION}-py3-none-any.whl") as wheel:
        names = set(wheel.namelist())
    files = {n for n in names if not n.startswith(f"partagpu-{VERSION}.dist-info/")}
    expected = package_files()
    assert {"partagpu/pgr/wordlists/english.txt", "partagpu/pgr/wordlists/french.txt"} <= expected
    assert files == expected, (f"missing: {sorted(expected - files)}, "
                               f"unexpected: {sorted(files - expected)}")


@needs_python
def test_sdist_holds_what_builds_the_wheel_and_no_tests(dist):
    out, _ = dist
    top = f"partagpu-{VERSION}/"
    with tarfile.open(out / f"partagpu-{VERSION}.tar.gz") as sdist:
        names = {m.name.removeprefix(top) for m in sdist.getmembers() if m.isfile()}
    assert {"pyproject.toml", "README.md", "PKG-INFO"} <= names
    assert {n for n in names if n.startswith("partagpu/")} == package_files()
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    # setuptools adds tests/test*.py by default (without conftest.py and the fakes they need);
    # python/MANIFEST.in prunes them.
    assert not [n for n in names if n.startswith("tests/")], \
        "the sdist has python/tests/ (python/MANIFEST.in needs `prune tests`)"


@needs_python
def test_wheel_installs_into_a_fresh_venv(dist, tmp_path):
    out, _ = dist
    wheel = out / f"partagpu-{VERSION}-py3-none-any.whl"
    venv = tmp_path / "fresh"
    result = run([PYTHON, "-m", "venv", venv])
    assert result.returncode == 0, result.stderr
    install = [venv / "bin" / "pip", "install", "--quiet", "--no-index", "--find-links", out,
               "--find-links", WHEELHOUSE, f"partagpu=={VERSION}"]
    result = run(install)
    if result.returncode != 0:
        # First run, or new pins: fetch the dependencies' wheels (the only network access).
        fetch = run([PYTHON, "-m", "pip", "download", "--quiet", "--only-binary", ":all:",
                     "--dest", WHEELHOUSE, wheel], timeout=300)
        assert fetch.returncode == 0, fetch.stdout + fetch.stderr
        (WHEELHOUSE / wheel.name).unlink(missing_ok=True)  # only dependencies are kept there
        result = run(install)
    assert result.returncode == 0, result.stdout + result.stderr

    # -I: no current directory, PYTHONPATH or user site, so only the installed copy is seen.
    probe = (
        "import json, importlib.metadata, partagpu, partagpu.pgr, partagpu.remote\n"
        "from partagpu.pgr import codes\n"
        "print(json.dumps({'version': partagpu.__version__,\n"
        "    'metadata': importlib.metadata.version('partagpu'), 'file': partagpu.__file__,\n"
        "    'words': {lang: len(codes.word_list(lang)) for lang in codes.LANGUAGES},\n"
        "    'room': partagpu.Room.__module__}))\n")
    result = run([venv / "bin" / "python", "-I", "-c", probe], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["version"] == seen["metadata"] == VERSION
    assert Path(seen["file"]).is_relative_to(venv), seen["file"]
    assert seen["words"] == {"en": 2048, "fr": 2048}
    assert seen["room"].startswith("partagpu.remote")
    result = run([venv / "bin" / "python", "-I", "-m", "partagpu", "--help"], cwd=tmp_path)
    assert result.returncode == 0 and "peers" in result.stdout, result.stdout + result.stderr
