import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from unittest.mock import patch

import pytest

from banditbench.data import load_dataset, synthetic

# A suite started in the background by a non-interactive shell (or by nohup, cron, some CI runners) inherits SIGINT
# ignored, and so would every command the tests start, which Python then leaves deaf to Ctrl-C. The tests of Ctrl-C
# need the disposition a terminal gives a command.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def restored_registry():
    """Plugins registered by a test are forgotten afterwards (other tests list every registered algorithm)."""
    from banditbench.algos import ALGORITHMS, plugins

    algorithms, origins = dict(ALGORITHMS), dict(plugins.ORIGINS)
    yield
    ALGORITHMS.clear()
    ALGORITHMS.update(algorithms)
    plugins.ORIGINS.clear()
    plugins.ORIGINS.update(origins)


@pytest.fixture
def data_dir(tmp_path) -> Path:
    """A small, easy synthetic dataset: 20 users in 2 clusters, d = 5, K = 10."""
    folder = tmp_path / "datasets"
    synthetic.prepare(folder, users=20, clusters=2, dim=5, arms=10, noise=0.1, z=0.0, seed=0)
    return folder


@pytest.fixture
def dataset(data_dir):
    return load_dataset(data_dir, "synthetic")


def banditbench(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    """Run the real command line in a subprocess, as a user would (``env``: variables to add to ours)."""
    return subprocess.run(
        [sys.executable, "-m", "banditbench", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=None if env is None else {**os.environ, **env},
    )


def banditbench_here(*args, capsys) -> SimpleNamespace:
    """The command line in this process, where a subprocess's start-up would dominate a test: its exit code (user
    errors exit 2, as the real command does), stdout and stderr."""
    from banditbench import cli

    with patch.object(sys, "argv", ["banditbench", *map(str, args)]):
        try:
            cli.main()
            code = 0
        except SystemExit as e:
            code = e.code or 0
    captured = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=captured.out, stderr=captured.err)
