"""How often EE-Net's exploration network f2 overturns the exploitation network f1, over time.

    .venv/bin/python benchmarks/eenet_overturn.py [--movielens ../shared/datasets/movielens-100k] [--rounds 3000]
        [--seeds 2] [--variants default,explore_lr=0.01,code_decision=true]

Prepares MovieLens-100K (``prepare movielens --variant 100k``: the recommendation protocol in paper mode,
50 groups, K = 10, d = 10) in a temporary folder and runs EE-Net once per variant and seed. A variant is
``default`` or comma-free ``NAME=VALUE`` pairs joined by ``+`` (``explore_lr=0.01+train_steps=100``).
Prints, per variant, the mean final regret and the share of rounds in which the decision maker chose another
arm than f1 alone, in windows of T/10 rounds (the runner's ``diag_overturn_share``, sampled every 100 rounds,
averaged over the window and the seeds). Random play's regret on this protocol is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MOVIELENS_100K = ROOT.parent / "shared" / "datasets" / "movielens-100k"


def parse_variant(text: str) -> dict:
    if text == "default":
        return {}
    params = {}
    for pair in text.split("+"):
        name, value = pair.split("=", 1)
        params[name] = json.loads(value)
    return params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--movielens",
        type=Path,
        default=MOVIELENS_100K if MOVIELENS_100K.is_dir() else Path("/work/shared/datasets/movielens-100k"),
    )
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--variants", default="default,explore_lr=0.01,code_decision=true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from banditbench.algos import ALGORITHMS
    from banditbench.data import load_dataset, movielens
    from banditbench.runner import Unit, run_unit
    from banditbench.runner.executors import limit_threads

    limit_threads()
    with tempfile.TemporaryDirectory() as folder:
        movielens.prepare(Path(folder), variant="100k", source=str(args.movielens), offline=True)
        dataset = load_dataset(Path(folder), "movielens")
        windows = np.linspace(0, args.rounds, 11).astype(int)
        for variant in ["random", *args.variants.split(",")]:
            algorithm, params = ("random", {}) if variant == "random" else ("eenet", parse_variant(variant))
            finals, shares = [], []
            for seed in range(args.seeds):
                unit = Unit(
                    "movielens",
                    "recommendation",
                    algorithm,
                    {**ALGORITHMS[algorithm].defaults(), **params},
                    0,
                    seed,
                    args.rounds,
                    None,
                )
                outcome = run_unit(unit, dataset).outcome
                finals.append(float(outcome.column("regret").to_numpy().sum()))
                if "diag_overturn_share" in outcome.column_names:
                    share = outcome.column("diag_overturn_share").to_numpy(zero_copy_only=False)
                    shares.append([np.nanmean(share[a:b]) for a, b in zip(windows[:-1], windows[1:])])
            spread = np.std(finals, ddof=1) if len(finals) > 1 else 0.0
            line = f"{variant:32s} final regret {np.mean(finals):8.1f} ± {spread:6.1f}"
            if shares:
                line += "  overturn share per T/10: " + " ".join(f"{v:.2f}" for v in np.mean(shares, axis=0))
            print(line, flush=True)


if __name__ == "__main__":
    main()
