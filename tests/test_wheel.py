"""The package as a user installs it: a wheel built from this tree, installed into a fresh virtual environment,
runs its console script. No download: the dependencies come from this environment's site-packages."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_wheel_installs_into_a_fresh_venv_and_runs(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist", ROOT],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("banditbench_lab-*.whl")
    packaged = {name for name in zipfile.ZipFile(wheel).namelist() if name.startswith("banditbench/")}
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "banditbench").rglob("*") if p.is_file()}
    assert {s for s in sources if "__pycache__" not in s} <= packaged  # every file read at run time ships

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)  # its pip comes from ensurepip, offline
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True
    ).stdout.strip()
    # this environment's packages (numpy, torch, …) behind the fresh one's, without its editable banditbench
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # --ignore-installed: never uninstall the editable banditbench-lab the .pth makes visible
    install = [
        python,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-index",
        "--ignore-installed",
        "--disable-pip-version-check",
        wheel,
    ]
    done = subprocess.run(install, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

    command = venv / "bin" / "banditbench"
    version = subprocess.run([command, "--version"], capture_output=True, text=True, cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("banditbench "), version.stderr
    listed = subprocess.run([command, "list", "protocols"], capture_output=True, text=True, cwd=tmp_path)
    assert listed.returncode == 0 and "recommendation" in listed.stdout, listed.stderr
    where = subprocess.run(
        [python, "-c", "import banditbench; print(banditbench.__file__)"], capture_output=True, cwd=tmp_path
    )
    assert where.stdout.decode().startswith(str(venv)), "the installed wheel, not this tree, must be imported"
