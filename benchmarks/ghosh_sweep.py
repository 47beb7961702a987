"""Where does CMLB beat CLUB? Ghosh et al. (2021, §6.1)'s synthetic setting, swept at a reduced size.

    .venv/bin/python benchmarks/ghosh_sweep.py [--steps 200 --big-steps 100 --seeds 2 --sigmas 0.1 0.3 1
        --users 100 500 --zs 0 1 2 --out ghosh-sweep.csv]

For every noise σ ∈ {0.1, 0.3, 1}, number of users N ∈ {100, 500} and cluster imbalance z ∈ {0, 1, 2} (5 clusters,
K = 25, d = 15, fresh N(0, I/d) contexts, the synchronous protocol) it prepares the dataset and runs, on the same
seeds: CMLB and independent OFUL with the self-normalised radius β (σ in the radius = the data's σ, δ = 0.4,
CMLB's α = C = 0.2 and horizon = the steps run, so that its schedule scales with the run), LinUCB-Ind at α = 1,
and CLUB (α₂ = 1) twice: at α = 1 (a LinUCB α) and at α = OFUL's mean radius β̄ measured in the same setting (the
exploration scale of the OFUL learners). N = 100 runs ``--steps`` steps, N = 500 ``--big-steps``. One CSV row per
setting and algorithm: final cumulative regret per user (mean over seeds) and the exploration scale used.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]


def banditbench(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "banditbench", *args], check=True, cwd=ROOT, capture_output=True)


def finals(out: Path) -> dict[str, tuple[float, float]]:
    """label → (mean final regret over seeds, mean final diag_radius or NaN), read from the shards."""
    manifest = json.loads((out / "manifest.json").read_text())
    by_label: dict[str, list[tuple[float, float]]] = {}
    for unit in manifest["units"]:
        table = pq.read_table(out / "shards" / f"{unit}.parquet").to_pandas()
        radius = table["diag_radius"].dropna().iloc[-1] if "diag_radius" in table else np.nan
        by_label.setdefault(manifest["labels"].get(unit, unit.rsplit("-seed", 1)[0]), []).append(
            (float(table["regret"].sum()), float(radius))
        )
    return {label: tuple(np.mean(values, axis=0)) for label, values in by_label.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--big-steps", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--sigmas", type=float, nargs="+", default=[0.1, 0.3, 1.0])
    parser.add_argument("--users", type=int, nargs="+", default=[100, 500])
    parser.add_argument("--zs", type=float, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path("ghosh-sweep.csv"))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for sigma in args.sigmas:
            for users in args.users:
                steps = args.steps if users == 100 else args.big_steps
                for z in args.zs:
                    data, rounds = Path(tmp) / f"d-{sigma}-{users}-{z}", str(users * steps)
                    banditbench(
                        "prepare",
                        "synthetic",
                        "--protocol",
                        "synchronous",
                        "--noise",
                        str(sigma),
                        "--users",
                        str(users),
                        "--z",
                        str(z),
                        "--data-dir",
                        str(data),
                    )
                    common = [
                        "run",
                        "--data-dir",
                        str(data),
                        "--dataset",
                        "synthetic",
                        "--rounds",
                        rounds,
                        "--seeds",
                        str(args.seeds),
                        "--jobs",
                        "1",
                    ]
                    radius = [f"{a}.sigma={sigma}" for a in ("cmlb", "oful-ind")] + [f"cmlb.horizon={steps}"]
                    first = Path(tmp) / f"r1-{sigma}-{users}-{z}"
                    banditbench(
                        *common,
                        "--algos",
                        "cmlb,oful-ind,linucb-ind,club",
                        "--out",
                        str(first),
                        *[f"--set={s}" for s in radius + ["club.alpha=1", "club.alpha2=1"]],
                    )
                    result = finals(first)
                    beta = result["oful-ind"][1]
                    second = Path(tmp) / f"r2-{sigma}-{users}-{z}"
                    banditbench(
                        *common,
                        "--algos",
                        "club",
                        "--out",
                        str(second),
                        f"--set=club.alpha={beta:.3f}",
                        "--set=club.alpha2=1",
                    )
                    result["club (α = β̄)"] = finals(second)["club"]
                    scale = {"cmlb": None, "oful-ind": None, "linucb-ind": 1.0, "club": 1.0, "club (α = β̄)": beta}
                    for label, (regret, used) in result.items():
                        rows.append(
                            {
                                "sigma": sigma,
                                "users": users,
                                "z": z,
                                "steps": steps,
                                "algorithm": label,
                                "regret_per_user": regret / users,
                                "exploration_scale": used if scale[label] is None else scale[label],
                            }
                        )
                    line = ", ".join(f"{r['algorithm']} {r['regret_per_user']:.1f}" for r in rows[-len(result) :])
                    print(f"σ={sigma} N={users} z={z} steps={steps}: {line}", flush=True)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
