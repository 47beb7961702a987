"""Golden results: every registered algorithm's per-round outcome on small fixed problems, pinned by digest.

The digests in tests/golden/ were computed with the one-unit-at-a-time engine. A refactoring, a speed-up or a
new engine must leave them unchanged; where one must change (a fixed bug), regenerate only that setting with
``python tests/test_golden.py SETTING`` and say why in the commit message.

A digest covers the outcome columns only (t, user, chosen, reward, expected and best expected reward, regret,
and for slates the slate and its clicks): not the file metadata, not the timings.

Matrix products round differently under OpenBLAS's AVX-512 kernels than under its AVX2 ones, which moves near-tied
choices of the linear algorithms on MovieLens and of the GLM slates; torch's kernels without vectorisation round
otherwise again, which moves M-CNB's. The digests were computed with OpenBLAS's Haswell (AVX2) kernels and torch's
AVX2 kernels, and every command of a golden run is pinned to them, so they hold on any x86-64 machine with AVX2,
numpy's own OpenBLAS and the torch build of the set-up; elsewhere the comparison is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import banditbench  # noqa: E402
from fixtures_logged import write_mind_fixture  # noqa: E402

GOLDEN = Path(__file__).parent / "golden"
# Genuine raw files beside the checkout (../shared/datasets), or where $BANDITBENCH_SHARED_DATASETS points.
SHARED = Path(
    os.environ.get("BANDITBENCH_SHARED_DATASETS", Path(__file__).resolve().parents[1].parent / "shared" / "datasets")
)
OUTCOME = (
    "t",
    "user",
    "chosen",
    "reward",
    "expected_reward",
    "best_expected_reward",
    "regret",
    "slate",
    "clicked",
    "clicks",
)
ROUNDS, SEEDS = "80", "2"
CPUINFO = Path("/proc/cpuinfo")
AVX2 = platform.machine().lower() in ("x86_64", "amd64") and CPUINFO.is_file() and " avx2" in CPUINFO.read_text()
PINNED_KERNELS = {"OPENBLAS_CORETYPE": "Haswell", "ATEN_CPU_CAPABILITY": "avx2"}

ONE_ARM = [
    "random",
    "linucb-one",
    "linucb-ind",
    "oracle",
    "club",
    "sclub",
    "cofiba",
    "locb",
    "dynucb",
    "bass",
    "cmlb",
    "sclb",
    "pmlb",
    "oful-ind",
    "lints-one",
    "lints-ind",
    "blr-one",
    "blr-ind",
    "neuucb-one",
    "neuucb-ind",
    "neuralts-one",
    "neuralts-ind",
    "eenet",
    "neurallinear",
    "neurallinear-ts",
    "metaban",
    "mcnb",
    "bootrms",
    "dropout-ts",
    "paramnoise",
    "bbb",
]
SLATE = [
    "slate-random",
    "2-slate-random",
    "glm-ucb",
    "2-glm-ucb",
    "n-glm-ucb",
    "2-n-glm-ucb",
    "n-linucb",
    "2-n-linucb",
    "n-greedy",
    "2-n-greedy",
    "n-dropout-ucb",
    "2-n-dropout-ucb",
    "s-n-galm-ucb",
    "2-s-n-galm-ucb",
    "s-n-gblm-ucb",
    "2-s-n-gblm-ucb",
]


def prepare_synthetic(data: Path) -> tuple[str, list[str]]:
    run_ok("prepare", "synthetic", "--users", "20", "--clusters", "2", "--dim", "5", "--arms", "10", "--data-dir", data)
    return "synthetic", []


def prepare_movielens(data: Path) -> tuple[str, list[str]]:
    run_ok(
        "prepare",
        "movielens",
        "--variant",
        "100k",
        "--source",
        SHARED / "movielens-100k",
        "--offline",
        "--data-dir",
        data,
    )
    return "movielens", []


def prepare_shuttle(encoding: str):
    def prepare(data: Path) -> tuple[str, list[str]]:
        run_ok(
            "prepare",
            "shuttle",
            "--source",
            SHARED / "uci-shuttle",
            "--offline",
            "--encoding",
            encoding,
            "--data-dir",
            data,
        )
        return "shuttle", []

    return prepare


def prepare_mind(data: Path) -> tuple[str, list[str]]:
    from banditbench.data import logged

    raw = write_mind_fixture(data.parent / "mind-raw")
    logged.prepare_mind(data, source=str(raw), offline=True, verify=False)
    run_ok("simulator", "train", "mind", "--data-dir", data, "--epochs", "1", "--dim", "16")
    return "mind", ["--budget", "20", "--env", "users=4", "--env", "slate_size=3", "--env", "pretrain_epochs=1"]


# setting → (how to prepare it, its algorithms, the raw data it needs from ../shared/datasets)
SETTINGS = {
    "synthetic": (prepare_synthetic, ONE_ARM, None),
    "movielens-100k": (prepare_movielens, [*ONE_ARM, "neu-au"], "movielens-100k"),
    "shuttle-block": (prepare_shuttle("block"), ONE_ARM, "uci-shuttle"),
    "shuttle-shift": (prepare_shuttle("shift"), ONE_ARM, "uci-shuttle"),
    "mind-slates": (prepare_mind, SLATE, None),
}


def run_ok(*args) -> str:
    done = banditbench(*args, env=PINNED_KERNELS)
    assert done.returncode == 0, f"banditbench {' '.join(map(str, args))} failed:\n{done.stderr}"
    return done.stdout


def digest(shard: Path) -> str:
    """sha256 over the outcome columns' names, dtypes and bytes."""
    table = pq.read_table(shard)
    h = hashlib.sha256()
    for name in OUTCOME:
        if name not in table.column_names:
            continue
        column = table[name].combine_chunks()
        if pa.types.is_fixed_size_list(column.type):  # a slate: one row of m items per round
            values = column.flatten().to_numpy().reshape(len(column), column.type.list_size)
        else:
            values = column.to_numpy()
        h.update(f"{name}:{values.dtype.str}:{values.shape}".encode())
        h.update(np.ascontiguousarray(values).tobytes())
    return h.hexdigest()


def compute(setting: str, root: Path) -> dict[str, str]:
    prepare, algorithms, _ = SETTINGS[setting]
    data = root / "datasets"
    dataset, extra = prepare(data)
    out = root / "out"
    run_ok(
        "run",
        "--dataset",
        dataset,
        "--data-dir",
        data,
        "--algos",
        ",".join(algorithms),
        "--rounds",
        ROUNDS,
        "--seeds",
        SEEDS,
        "--seed",
        "0",
        "--jobs",
        "1",
        "--out",
        out,
        *extra,
    )
    shards = sorted(p for p in out.rglob("*.parquet") if not p.name.endswith(".timing.parquet"))
    return {p.name.removesuffix(".parquet"): digest(p) for p in shards}


@pytest.mark.parametrize("setting", SETTINGS)
def test_outcomes_match_the_golden_digests(setting, tmp_path):
    raw = SETTINGS[setting][2]
    if not AVX2:
        pytest.skip("the digests pin OpenBLAS's and torch's x86-64 AVX2 kernels")
    if raw is not None and not (SHARED / raw).is_dir():
        pytest.skip(f"{SHARED / raw} is absent")
    expected = json.loads((GOLDEN / f"{setting}.json").read_text())
    found = compute(setting, tmp_path)
    assert sorted(found) == sorted(expected), "the set of units changed"
    changed = [unit for unit in expected if found[unit] != expected[unit]]
    assert not changed, f"outcomes changed for: {', '.join(changed)}"


def test_every_registered_algorithm_is_pinned():
    from banditbench.algos import ALGORITHMS

    pinned = {algo for _, algorithms, _ in SETTINGS.values() for algo in algorithms}
    assert set(ALGORITHMS) <= pinned, f"add a golden digest for: {', '.join(sorted(set(ALGORITHMS) - pinned))}"


if __name__ == "__main__":  # python tests/test_golden.py [SETTING ...]: (re)write the digests
    import tempfile

    GOLDEN.mkdir(exist_ok=True)
    for name in sys.argv[1:] or SETTINGS:
        with tempfile.TemporaryDirectory() as folder:
            digests = compute(name, Path(folder))
        (GOLDEN / f"{name}.json").write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
        print(f"{name}: {len(digests)} shards")
