"""Evaluation on logs, checked against ground truth, against the Open Bandit Pipeline, and timed.

    .venv/bin/python benchmarks/ope.py synthetic [--seeds 100] [--events 5000]
    .venv/bin/python benchmarks/ope.py obd [--source PATH/obd-small]
    .venv/bin/python benchmarks/ope.py parity --obp-python /tmp/obpvenv/bin/python [--source …/obd-small]
    .venv/bin/python benchmarks/ope.py speed [--events 12168084] [--replay 1000000]

``synthetic``: a prepared linear environment (20 users in 4 clusters, d = 5, K = 10, σ = 0.1) is logged by a known
policy, uniform or a softmax of the true expected rewards (β = 2); a target policy that plays a softmax of the true
model (β = 10) is replayed on each log through the logged protocol (replay on the uniform log, rejection sampling on
the other) and scored by every estimator, the reward model fitted with λ = MODEL_RIDGE; its true value is the mean
over 200 000 fresh rounds of Σ_a π(a|x) μ(x, a). Prints each estimator's bias (with the 95 % interval of the mean
over seeds), RMSE, mean interval width and the share of seeds whose interval covers the truth. Then Li et al.
(2011)'s Theorem 1: LinUCB replayed on ten uniform logs against its online runs over as many rounds as a replay
keeps, and the difference of the two means.

``obd``: the Open Bandit Pipeline paper's check of estimators (Saito et al. 2021, §5): the Bernoulli TS policy's
value estimated from the uniform-random log, against its on-policy CTR in its own log. The BTS policy is taken as
its action frequencies per slot in its log (context-free, as ZOZO's BTS is), π(item | slot).

``parity``: the same arrays (the OBD random log, the BTS target, our reward model's estimates) through this module's
estimators and through obp's (installed in another environment, run by ``--obp-python``): the largest absolute
difference per estimator.

``speed``: a log shaped as OBD's "all" campaign (80 items with 41 features, 3 slots, a uniform logging policy) of
``--events`` events is generated and prepared (the reward model fitted), then LinUCB is replayed on its first
``--replay`` events in one process; prints events per second of preparing and of replaying, the time to replay every
event at that rate, and peak memory. The full OBD files are not on this machine, hence the generated log.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from banditbench import api  # noqa: E402
from banditbench.algos.base import Policy  # noqa: E402
from banditbench.data import load_dataset, logs  # noqa: E402
from banditbench.envs.linear import LinearEnvironment  # noqa: E402
from banditbench.envs.logged import LoggedEnvironment, simulate_log  # noqa: E402
from banditbench.report import offpolicy  # noqa: E402

OBD_SMALL = ROOT.parent / "shared" / "datasets" / "obd-small"
ESTIMATORS = ("replay", "IPS", "SNIPS", "DM", "DR")
# The reward model's ridge λ on the synthetic logs: the environment is linear per user, so with λ → 0 the model is
# correct and DM's assumption holds; prepare's default λ = 1 shrinks each user's fit of ~100 events towards the
# pooled one, which biases DM by about −0.07 at 2 000 events (shrinkage, not an error of the estimator).
MODEL_RIDGE = 0.01


def softmax(scores: np.ndarray, beta: float) -> np.ndarray:
    z = np.exp(beta * (scores - scores.max(axis=-1, keepdims=True)))
    return z / z.sum(axis=-1, keepdims=True)


def target_policy(theta: np.ndarray, beta: float) -> type:
    """A fixed policy: arm a with probability ∝ exp(β ⟨θ_user, x_a⟩), θ the environment's true parameters."""

    class KnownSoftmax(Policy):
        name = "known-softmax"

        def select(self, view, budget):
            p = softmax(view.arms[:] @ theta[view.user], beta)
            return int(self.rng.choice(len(p), p=p))

        def update(self, view, chosen, reward):
            pass

    return KnownSoftmax


def synthetic(args) -> None:
    folder = Path(tempfile.mkdtemp(prefix="ope-"))
    api.prepare("synthetic", users=20, clusters=4, dim=5, arms=10, noise=0.1, data_dir=folder)
    dataset = load_dataset(folder, "synthetic")
    probe = LinearEnvironment(dataset, np.random.SeedSequence(10**6))
    theta, beta_target = probe.theta, 10.0
    truth = np.mean([softmax(r.arms @ theta[r.user], beta_target) @ r.expected for r in probe.rounds(200_000)])
    print(f"target: softmax(β = {beta_target:g}) of the true model; true value {truth:.4f} (200 000 rounds)")
    behaviours = {"uniform": None, "softmax (β = 2)": lambda r: softmax(r.expected, 2.0)}
    for label, behaviour in behaviours.items():
        estimates = {name: [] for name in ESTIMATORS}
        for seed in range(args.seeds):
            env = LinearEnvironment(dataset, np.random.SeedSequence(seed))
            log, _ = simulate_log(env, args.events, behaviour, seed=seed)
            name = f"log{seed}"
            parameters = logs.log_parameters({"behaviour": label}, ridge=MODEL_RIDGE)
            logs.write_log(folder / name, name, log, parameters, force=True)
            results = api.run(  # a master seed per log: the target's own draws independent from log to log
                [target_policy(theta, beta_target)],
                dataset=name,
                rounds=args.events,
                seeds=1,
                data_dir=folder,
                seed=seed,
            )
            table = results.logged().set_index("estimator")
            for estimator in ESTIMATORS:
                row = table.loc[estimator]
                estimates[estimator].append((row["estimate"], row["ci_low"], row["ci_high"], row["size"]))
        print(f"\nlogging policy {label}: {args.seeds} logs of {args.events} events")
        print("estimator  bias (95 % interval)        RMSE    interval width  coverage  sample size")
        for estimator, rows in estimates.items():
            value, low, high, size = np.array(rows).T
            error = value - truth
            half = 1.96 * error.std(ddof=1) / np.sqrt(len(error))
            covered = np.mean((low <= truth) & (truth <= high))
            print(
                f"{estimator:9s}  {error.mean():+.4f} [{error.mean() - half:+.4f}, {error.mean() + half:+.4f}]  "
                f"{np.sqrt(np.mean(error**2)):.4f}  {np.mean(high - low):.4f}          {covered:6.1%}    "
                f"{np.mean(size):,.0f}"
            )
    replay_against_online(folder, dataset, args)


def replay_against_online(folder: Path, dataset, args, logs_count: int = 10) -> None:
    """Li et al. 2011, Theorem 1: LinUCB-Ind replayed on independent uniform logs (one replay each) against its
    online runs over as many rounds as a replay keeps on average, both means with their 95 % t-intervals."""
    events, replays, kept = 4 * args.events, [], []
    for seed in range(logs_count):
        env = LinearEnvironment(dataset, np.random.SeedSequence(4242 + seed))
        log, _ = simulate_log(env, events, seed=4242 + seed)
        name = f"uniform{seed}"
        logs.write_log(folder / name, name, log, logs.log_parameters({"behaviour": "uniform"}), force=True)
        replayed = api.run(["linucb-ind"], dataset=name, rounds=events, seeds=1, data_dir=folder)
        replay = replayed.logged().set_index("estimator").loc["replay"]
        replays.append(replay["estimate"])
        kept.append(replay["size"])
    horizon = int(round(np.mean(kept)))
    online = api.run(["linucb-ind"], dataset="synthetic", rounds=horizon, seeds=logs_count, data_dir=folder)
    rewards = online.frame().groupby("seed")["reward"].mean().to_numpy()
    replays = np.array(replays)
    difference = replays.mean() - rewards.mean()
    half = 1.96 * np.hypot(replays.std(ddof=1), rewards.std(ddof=1)) / np.sqrt(logs_count)
    print(
        f"\nLinUCB-Ind (Li et al. 2011, Theorem 1): {logs_count} uniform logs of {events:,} events, one replay each, "
        f"keep {np.mean(kept):,.0f} events on average; replay CTR {interval(replays)}; online over {horizon:,} rounds, "
        f"{logs_count} seeds: {interval(rewards)}; difference {difference:+.4f} [{difference - half:+.4f}, "
        f"{difference + half:+.4f}]"
    )


def interval(values: np.ndarray) -> str:
    half = 1.96 * values.std(ddof=1) / np.sqrt(len(values))
    return f"{values.mean():.4f} [{values.mean() - half:.4f}, {values.mean() + half:.4f}]"


def obd_arrays(source: str) -> dict:
    """The uniform log's arrays with the BTS policy as the target (module docstring), and BTS's on-policy clicks."""
    folder = Path(tempfile.mkdtemp(prefix="obd-"))
    arrays = {}
    for policy in ("bts", "random"):
        api.prepare("obd", policy=policy, source=source, data_dir=folder / policy)
        dataset = load_dataset(folder / policy, "obd")
        events = dataset.table("events")
        arrays[policy] = events
    bts = arrays["bts"]
    counts = np.zeros((80, 3))
    np.add.at(counts, (bts["action"].to_numpy(), bts["position"].to_numpy() - 1), 1.0)
    target = counts / counts.sum(axis=0)  # π(item | slot)
    random = arrays["random"]
    dataset = load_dataset(folder / "random", "obd")
    env = LoggedEnvironment(dataset, np.random.SeedSequence(0))
    q = np.array([event.estimates for event in env.rounds(len(random))])  # [n, 80], the event's own slot
    slot = random["position"].to_numpy() - 1
    action = random["action"].to_numpy()
    return {
        "reward": random["reward"].to_numpy(),
        "action": action,
        "position": slot,
        "pscore": random["propensity"].to_numpy(),
        "action_dist": target.T[slot],  # [n, 80]: π(· | the event's slot)
        "q": q,
        "on_policy": bts["reward"].to_numpy(),
        "bounds": (dataset.manifest["counts"]["reward_min"], dataset.manifest["counts"]["reward_max"]),
    }


def our_estimates(a: dict, seed: int = 0) -> dict[str, offpolicy.Estimate]:
    n = len(a["reward"])
    target = a["action_dist"][np.arange(n), a["action"]]
    q_logged = a["q"][np.arange(n), a["action"]]
    q_target = (a["action_dist"] * a["q"]).sum(axis=1)
    rng = np.random.default_rng(seed)  # replay: draw the target's item, keep the event when it is the logged one
    drawn = (rng.random((n, 1)) > a["action_dist"].cumsum(axis=1)).sum(axis=1)
    kept = drawn == a["action"]
    return offpolicy.every_estimate(
        a["reward"][kept], a["reward"], a["pscore"], target, q_logged, q_target, a["bounds"]
    )


def obd(args) -> None:
    a = obd_arrays(args.source)
    truth = offpolicy.replay(a["on_policy"])
    print(
        f"Bernoulli TS on-policy CTR in its own log: {truth.value:.5f} [{truth.low:.5f}, {truth.high:.5f}] "
        f"({len(a['on_policy']):,} events)"
    )
    print("estimator  estimate  95 % interval         sample size  relative error")
    for name, e in our_estimates(a).items():
        error = abs(e.value - truth.value) / truth.value
        print(f"{name:9s}  {e.value:.5f}   [{e.low:.5f}, {e.high:.5f}]  {e.size:11,.0f}  {error:.3f}")


OBP_PROGRAM = """
import json, sys
import numpy as np
from obp.ope import DirectMethod, DoublyRobust, InverseProbabilityWeighting, SelfNormalizedInverseProbabilityWeighting
a = np.load(sys.argv[1])
n = len(a["reward"])
dist = np.repeat(a["action_dist"][:, :, None], 3, axis=2)  # the same π for every slot: only each event's is read
q = np.repeat(a["q"][:, :, None], 3, axis=2)
common = dict(action=a["action"], position=a["position"], pscore=a["pscore"], action_dist=dist)
print(json.dumps({
    "IPS": InverseProbabilityWeighting().estimate_policy_value(reward=a["reward"], **common),
    "SNIPS": SelfNormalizedInverseProbabilityWeighting().estimate_policy_value(reward=a["reward"], **common),
    "DM": DirectMethod().estimate_policy_value(
        position=a["position"], action_dist=dist, estimated_rewards_by_reg_model=q
    ),
    "DR": DoublyRobust().estimate_policy_value(reward=a["reward"], estimated_rewards_by_reg_model=q, **common),
}))
"""


def parity(args) -> None:
    a = obd_arrays(args.source)
    ours = our_estimates(a)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "arrays.npz"
        np.savez(path, **{k: v for k, v in a.items() if k not in ("on_policy", "bounds")})
        done = subprocess.run(
            [args.obp_python, "-c", OBP_PROGRAM, str(path)], capture_output=True, text=True, check=True
        )
        version = subprocess.run(
            [args.obp_python, "-c", "import obp; print(obp.__version__)"], capture_output=True, text=True, check=True
        ).stdout.strip()
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"the OBD random log ({len(a['reward']):,} events), the BTS target; obp {version}")
    print("estimator  banditbench          obp                  |difference|")
    for name, value in theirs.items():
        print(f"{name:9s}  {ours[name].value:.15f}  {value:.15f}  {abs(ours[name].value - value):.1e}")


def speed(args) -> None:
    rng = np.random.default_rng(0)
    n, items = args.events, 80
    started = time.perf_counter()
    log = logs.Log(
        user=rng.integers(240, size=n),
        action=rng.integers(items, size=n),
        reward=(rng.random(n) < 0.0035).astype(float),
        propensity=np.full(n, 1 / items),
        arm_features=np.column_stack([rng.normal(size=items), np.eye(40)[rng.integers(40, size=items)]]).astype(
            np.float32
        ),
        items=np.arange(items).astype(str),
        position=1 + rng.integers(3, size=n),
    )
    generated = time.perf_counter() - started
    folder = Path(tempfile.mkdtemp(prefix="speed-"))
    started = time.perf_counter()
    logs.write_log(folder / "big", "big", log, logs.log_parameters({"source": "generated"}))
    prepared = time.perf_counter() - started
    del log
    size = sum(p.stat().st_size for p in (folder / "big").iterdir()) / 1e6
    print(f"generated {n:,} events in {generated:.1f} s; prepared (checks, reward model, Parquet) in {prepared:.1f} s "
          f"({n / prepared:,.0f} events/s), {size:,.0f} MB on disk")  # fmt: skip
    from banditbench.algos import ALGORITHMS
    from banditbench.results.units import Unit
    from banditbench.runner.executors import limit_threads
    from banditbench.runner.unit import run_unit

    limit_threads()
    dataset = load_dataset(folder, "big")
    unit = Unit("big", "logged", "linucb-one", ALGORITHMS["linucb-one"].defaults(), 0, 0, args.replay, None)
    started = time.perf_counter()
    result = run_unit(unit, dataset)
    wall = time.perf_counter() - started
    kept = int(np.asarray(result.outcome["kept"]).sum())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"LinUCB (linucb-one) replayed {args.replay:,} events in {wall:.1f} s: {args.replay / wall:,.0f} events/s, "
        f"{kept:,} kept; all {n:,} events at that rate: {n / (args.replay / wall) / 60:.1f} min; "
        f"peak memory {peak:,.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("synthetic")
    check.add_argument("--seeds", type=int, default=100)
    check.add_argument("--events", type=int, default=5000)
    for name in ("obd", "parity"):
        command = commands.add_parser(name)
        command.add_argument("--source", default=str(OBD_SMALL))
        if name == "parity":
            command.add_argument("--obp-python", required=True)
    timed = commands.add_parser("speed")
    timed.add_argument("--events", type=int, default=12_168_084)
    timed.add_argument("--replay", type=int, default=1_000_000)
    args = parser.parse_args()
    {"synthetic": synthetic, "obd": obd, "parity": parity, "speed": speed}[args.command](args)


if __name__ == "__main__":
    main()
