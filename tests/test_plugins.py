"""Your own algorithm: an import path, a class, or an installed plugin (entry-point group banditbench.algorithms),
and the policy contract checked on the experiment's first rounds before anything is written."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import banditbench as bb
from banditbench.algos.base import Policy
from banditbench.errors import UserError

sys.path.insert(0, str(Path(__file__).parent))  # the tests' fixture modules

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


pytestmark = pytest.mark.usefixtures("restored_registry")  # plugins registered by a test are forgotten after it


def cli(*args, cwd=ROOT, pythonpath=()):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, pythonpath), str(ROOT)])}
    return subprocess.run(
        [sys.executable, "-m", "banditbench", *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """examples/plugin installed with pip into a folder of its own (a copy, so the build leaves the source clean)."""
    root = tmp_path_factory.mktemp("plugin")
    shutil.copytree(EXAMPLES / "plugin", root / "src")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(root / "site"),
            str(root / "src"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return root / "site"


def shards(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "shards").glob("*.parquet") if not p.name.endswith(".timing.parquet"))


def test_import_path_runs_from_the_command_line_under_its_declared_name(data_dir, tmp_path):
    out = tmp_path / "out"
    done = cli(
        "run",
        "--algos",
        "examples.my_policy:EpsilonGreedy,linucb-one",
        "--dataset",
        "synthetic",
        "--data-dir",
        data_dir,
        "--rounds",
        300,
        "--seeds",
        2,
        "--out",
        out,
    )
    assert done.returncode == 0, done.stderr
    assert shards(out) == [
        "eps-greedy-seed0.parquet",
        "eps-greedy-seed1.parquet",
        "linucb-one-seed0.parquet",
        "linucb-one-seed1.parquet",
    ]
    assert "eps-greedy" in done.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["execution"]["settings"]["plugins"] == {
        "eps-greedy": "import path examples.my_policy:EpsilonGreedy"
    }  # where the class came from, for the record
    regret = pq.read_table(out / "shards" / "eps-greedy-seed0.parquet")["regret"].to_numpy()
    random = bb.run(algos="random", dataset="synthetic", rounds=300, seeds=1, data_dir=data_dir).frame()
    assert regret.sum() < 0.6 * random["regret"].sum()  # it learns: well under uniform play's regret


def test_set_reaches_an_import_path_policy_by_its_name(data_dir, tmp_path):
    base = [
        "--algos",
        "examples.my_policy:EpsilonGreedy",
        "--dataset",
        "synthetic",
        "--data-dir",
        data_dir,
        "--rounds",
        200,
        "--seeds",
        1,
    ]
    assert cli("run", *base, "--out", tmp_path / "a").returncode == 0
    done = cli("run", *base, "--out", tmp_path / "b", "--set", "eps-greedy.epsilon=1.0")
    assert done.returncode == 0, done.stderr
    [name] = shards(tmp_path / "b")
    assert name.startswith("eps-greedy-") and name != "eps-greedy-seed0.parquet"  # a non-default cell's hash
    explore = pq.read_table(tmp_path / "b" / "shards" / name)["regret"].to_numpy().sum()
    greedy = pq.read_table(tmp_path / "a" / "shards" / "eps-greedy-seed0.parquet")["regret"].to_numpy().sum()
    assert explore > greedy  # ε = 1 plays uniformly at random
    done = cli("run", *base, "--out", tmp_path / "c", "--set", "eps-greedy.epsilom=1.0")
    assert done.returncode == 2 and "eps-greedy has no hyper-parameter 'epsilom'" in done.stderr


def test_config_file_names_an_import_path(data_dir, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(
        'algos = ["examples.my_policy:EpsilonGreedy"]\ndataset = "synthetic"\nrounds = 100\n'
        'seeds = 1\n[set]\n"eps-greedy.ridge" = 2.0\n'
    )
    out = tmp_path / "out"
    done = cli("run", "--config", config, "--data-dir", data_dir, "--out", out)
    assert done.returncode == 0, done.stderr
    assert len(shards(out)) == 1 and shards(out)[0].startswith("eps-greedy-")


def test_installed_plugin_is_listed_with_its_source_and_runs(installed, data_dir, tmp_path):
    listed = cli("list", pythonpath=[installed])
    assert listed.returncode == 0, listed.stderr
    row = re.search(r"\blin-ts .*?; plugin from banditbench-lints 0\.1\.0", " ".join(listed.stdout.split()))
    assert row and "Agrawal & Goyal" in row[0]
    out = tmp_path / "out"
    done = cli(
        "run",
        "--algos",
        "lin-ts,linucb-one",
        "--set",
        "lin-ts.v=0.05",
        "--dataset",
        "synthetic",
        "--data-dir",
        data_dir,
        "--rounds",
        200,
        "--seeds",
        2,
        "--jobs",
        2,
        "--out",
        out,
        pythonpath=[installed],
    )
    assert done.returncode == 0, done.stderr
    assert [s.split("-seed")[0].rsplit("-", 1)[0] for s in shards(out)][:2] == ["lin-ts", "lin-ts"]
    assert "lin-ts" in done.stdout
    # the same units in one process give the same outcome as the two worker processes did
    sys.path.insert(0, str(installed))
    try:
        again = bb.run(
            algos=["lin-ts", "linucb-one"],
            params={"lin-ts.v": 0.05},
            dataset="synthetic",
            data_dir=data_dir,
            rounds=200,
            seeds=2,
            jobs=1,
        )
        assert shards(again.folder) == shards(out)
        for name in shards(out):
            assert pq.read_table(again.folder / "shards" / name)["chosen"].equals(
                pq.read_table(out / "shards" / name)["chosen"]
            )
    finally:
        sys.path.remove(str(installed))


def test_a_class_runs_through_the_api_and_a_notebook_redefinition_replaces_it(data_dir):
    class Greedy(Policy):
        """Always the first arm."""

        name = "first-arm"

        def select(self, view, budget):
            return 0

        def update(self, view, chosen, reward):
            pass

    results = bb.run(algos=[Greedy, "oracle"], dataset="synthetic", data_dir=data_dir, rounds=50, seeds=1)
    frame = results.frame()
    assert set(frame["algorithm"]) == {"first-arm", "oracle"}
    assert (frame.loc[frame["algorithm"] == "first-arm", "chosen"] == 0).all()
    assert results.summary().set_index("algorithm").at["first-arm", "role"] == "proposed"

    class Greedy(Policy):  # noqa: F811  (the cell run again, edited)
        name = "first-arm"

        def select(self, view, budget):
            return 1

        def update(self, view, chosen, reward):
            pass

    frame = bb.run(algos=Greedy, dataset="synthetic", data_dir=data_dir, rounds=20, seeds=1).frame()
    assert (frame["chosen"] == 1).all()


def policy(name: str, select, base=Policy, **attributes) -> type:
    return type("Broken", (base,), {"name": name, "select": select, "update": lambda self, v, c, r: None, **attributes})


@pytest.mark.parametrize(
    "algorithm, rule",
    [
        (
            type("Plain", (), {"name": "plain", "select": lambda s, v, b: 0, "update": lambda s, v, c, r: None}),
            "plain breaks the policy contract: Plain must subclass banditbench.algos.base.Policy",
        ),
        (
            type("NoUpdate", (Policy,), {"name": "no-update", "select": lambda s, v, b: 0}),
            "no-update breaks the policy contract: NoUpdate has no update() method",
        ),
        (
            policy("floaty", lambda self, view, budget: 1.5),
            "floaty breaks the policy contract: select() must return one arm index (an int), got float: 1.5",
        ),
        (
            policy("several", lambda self, view, budget: np.array([0, 1])),
            "several breaks the policy contract: select() must return one arm index (an int), "
            "got ndarray of shape (2,)",
        ),
        (
            policy("booly", lambda self, view, budget: True),
            "booly breaks the policy contract: select() must return one arm index (an int), got bool: True",
        ),
        (
            policy("failing", lambda self, view, budget: 0, update=lambda self, view, chosen, reward: 1 / 0),
            "failing breaks the policy contract: update(view, chosen, reward) failed: "
            "ZeroDivisionError: division by zero",
        ),
        (
            policy("outside", lambda self, view, budget: len(view.arms)),
            "outside breaks the policy contract: select() chose arm 10, outside the round's pool of 10 arms (0..9)",
        ),
        (
            policy("negative", lambda self, view, budget: -1),
            "negative breaks the policy contract: select() chose arm -1, outside the round's pool of 10 arms (0..9)",
        ),
        (
            policy("greedy-reader", lambda self, view, budget: int(np.argmax(view.arms[:] @ np.ones(5)))),
            "greedy-reader breaks the policy contract: select() exceeded the budget "
            "(policy tried to score 10 arms this "
            "round; the budget is 3)",
        ),
        (
            policy("peeker", lambda self, view, budget: 0, privileged=True),
            "peeker breaks the policy contract: only the oracle may see a round's hidden fields (privileged = True)",
        ),
        (policy("Upper", lambda self, view, budget: 0), "Broken does not declare a name"),
        (
            policy("linucb-one", lambda self, view, budget: 0),
            "Broken is named 'linucb-one', which is taken by a built-in",
        ),
        (
            type(
                "Rigid",
                (Policy,),
                {
                    "name": "rigid",
                    "__init__": lambda self: None,
                    "select": lambda s, v, b: 0,
                    "update": lambda s, v, c, r: None,
                },
            ),
            "rigid breaks the policy contract: its constructor must take the keywords n_users, n_arms, dim and seed",
        ),
    ],
)
def test_a_broken_contract_is_one_line_naming_the_rule_and_writes_nothing(algorithm, rule, data_dir, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(UserError) as caught:
        bb.run(algos=algorithm, dataset="synthetic", data_dir=data_dir, rounds=50, seeds=1, budget=3, out=out)
    message = str(caught.value)
    assert message.startswith(rule) and "\n" not in message
    assert not out.exists()


def test_a_choice_broken_after_the_checked_rounds_stops_the_run_in_the_same_words(data_dir, tmp_path):
    late = policy("late", lambda self, view, budget: 0 if view.t < 10 else -1)
    out = tmp_path / "out"
    with pytest.raises(UserError) as caught:
        bb.run(algos=late, dataset="synthetic", data_dir=data_dir, rounds=20, seeds=1, out=out)
    assert str(caught.value) == (
        "late breaks the policy contract at round 10: select() chose arm -1, outside the round's pool of 10 arms (0..9)"
    )
    assert not out.exists()


def test_a_broken_policy_from_the_command_line_is_one_line_and_writes_nothing(data_dir, tmp_path):
    module = tmp_path / "mine.py"
    module.write_text(
        "from banditbench.algos.base import Policy\n\n\nclass Last(Policy):\n    name = 'last'\n\n"
        "    def select(self, view, budget):\n        return len(view.arms)\n\n"
        "    def update(self, view, chosen, reward):\n        pass\n"
    )
    out = tmp_path / "out"
    done = cli(
        "run",
        "--algos",
        "mine:Last",
        "--dataset",
        "synthetic",
        "--data-dir",
        data_dir,
        "--rounds",
        20,
        "--seeds",
        1,
        "--out",
        out,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: last breaks the policy contract: select() chose arm 10, outside the round's pool of 10 arms (0..9)"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "reference, message",
    [
        ("examples.my_policy:Missing", "algos 'examples.my_policy:Missing': examples.my_policy has no class Missing"),
        ("no_such_module:Policy", "algos 'no_such_module:Policy': cannot import no_such_module"),
        ("no-such-algorithm", "unknown algorithm 'no-such-algorithm'; `banditbench list algorithms` shows them all"),
    ],
)
def test_unknown_references_are_one_line(reference, message, data_dir):
    with pytest.raises(UserError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        bb.run(algos=reference, dataset="synthetic", data_dir=data_dir, rounds=10, seeds=1)


def test_a_class_defined_in_a_function_cannot_go_to_worker_processes(data_dir):
    class Local(Policy):
        name = "local"

        def select(self, view, budget):
            return 0

        def update(self, view, chosen, reward):
            pass

    with pytest.raises(UserError, match="local is a class that worker processes cannot import .*; use jobs=1"):
        bb.run(algos=Local, dataset="synthetic", data_dir=data_dir, rounds=10, seeds=2, jobs=2)


def test_a_slate_plugin_must_return_a_slate(tmp_path):
    from fixtures_logged import write_mind_fixture

    from banditbench.algos.slate import SlatePolicy
    from banditbench.data import logged

    data = tmp_path / "datasets"
    logged.prepare_mind(data, source=str(write_mind_fixture(tmp_path / "raw")), offline=True, verify=False)
    done = cli("simulator", "train", "mind", "--data-dir", data, "--epochs", 1, "--dim", 16)
    assert done.returncode == 0, done.stderr

    class OneItem(SlatePolicy):
        name = "one-item"

        def select(self, view, budget):
            return view.arms.candidates[:1]

        def update(self, view, slate, clicks):
            pass

    with pytest.raises(UserError) as caught:
        bb.run(
            algos=OneItem,
            dataset="mind",
            data_dir=data,
            rounds=20,
            seeds=1,
            budget=20,
            env={"users": 4, "slate_size": 3, "pretrain_epochs": 1},
            out=tmp_path / "out",
        )
    assert str(caught.value).startswith(
        "one-item breaks the policy contract: select() must return a slate of 3 distinct item ids"
    )
    assert not (tmp_path / "out").exists()
