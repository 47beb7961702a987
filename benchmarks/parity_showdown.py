"""The Deep Bayesian Bandits Showdown's side of the parity harness (benchmarks/parity.py dispatches ``--algos
blr-one`` and ``--algos random`` here).

The instances are three of the Showdown's problems as its example script builds them (Riquelme, Tucker & Snoek
2018, §4 and App. A), drawn by its own samplers in run i's process after ``np.random.seed(i)``:

- ``wheel``: ``sample_wheel_bandit_data`` with the script's δ = 0.95, small rewards N(1.0 | 1.2, 0.05²) and the
  large one N(50, 0.01²); the expected rewards are the means its definition gives each context;
- ``statlog``: ``sample_statlog_data`` on UCI's shuttle training file (``--pools`` holds ``shuttle.trn``): the
  first ``--rounds`` rows of a shuffle, each feature standardised over those rows, reward 1 for the row's class;
- ``mushroom``: ``sample_mushroom_data`` on UCI's ``agaricus-lepiota.data`` (in ``--pools``): ``--rounds`` rows drawn
  with replacement, the 117 one-hot attributes as context, action 0 don't eat (0), action 1 eat (+5 if edible, else
  +5 or −35 with probability ½); the expected rewards are 0, and 5 or −15.

Their learners run unedited from REF (the deep_contextual_bandits directory of tensorflow/models, or a fork):
``LinearFullPosteriorSampling`` (their LinFullPost) for ``blr-one`` and ``UniformSampling`` for ``random``, in the
round loop of their ``run_contextual_bandit`` (a context, the action, its reward, the update) without its per-round
printing. Neither learner needs TensorFlow, but their ``data_sampler`` imports it at the top only to open files
through ``tf.gfile``: the process gets a ``tensorflow`` module whose ``gfile.Open`` is ``open``, nothing else (a
real TensorFlow 2, which has no ``tf.gfile``, gets that one attribute).

Each run of theirs records its contexts, realised and expected rewards; ours replays them (the same rows in the
same order), each context shown as the rewards-table protocol shows it: block-encoded, one block per action, so
that BLR keeps the Showdown's per-action models. The posterior draws are each side's own (theirs from NumPy's global
generator, ours from the runner's streams), so the same arm is expected often, not always.

Their LinFullPost fits an intercept (their ``ContextualDataset(intercept=True)`` appends a constant 1 to every
context); so does our BLR (``intercept``, on by default), in each action's model; the control without it shows what
the intercept is worth.

Run as a script, it runs their network learners instead (NeuralLinear, BootRMS, Dropout, ParamNoise and BBB, for
ours of ``NETWORKS``; TensorFlow 2 in a scratch environment, ``network_run``), or with ``--ours`` ours on the rows
their run of each seed draws, and with ``--against`` pairs the two by seed.
"""

from __future__ import annotations

import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

PROBLEMS = ("wheel", "statlog", "mushroom")
# their example script's wheel: δ, the small rewards' means and σ, the large reward's mean and σ
WHEEL = {"delta": 0.95, "mean_v": [1.0, 1.0, 1.0, 1.0, 1.2], "std_v": [0.05] * 5, "mu_large": 50.0, "std_large": 0.01}
STATLOG_FILE, STATLOG_ACTIONS, STATLOG_ROWS = "shuttle.trn", 7, 43_500
MUSHROOM_FILE = "agaricus-lepiota.data"
POOL_FILES = {"statlog": STATLOG_FILE, "mushroom": MUSHROOM_FILE}
# their learner (module, class) for each of ours
METHODS = {
    "blr-one": ("linear_full_posterior_sampling", "LinearFullPosteriorSampling"),
    "random": ("uniform_sampling", "UniformSampling"),
}
# our hyper-parameter → their hparams field
KNOBS = {"prior_a": "a0", "prior_b": "b0", "ridge": "lambda_prior", "initial_pulls": "initial_pulls"}
# keys of a learner's parameters that the harness reads itself: how the recorded contexts are shown to ours
SHOWN = {"per_action": True}


def check_settings(algorithm: str, settings: dict, rounds: int, problem: str) -> None:
    """Refuse with one line a setting their learner has no field for, or a horizon beyond their statlog sampler's
    rows."""
    missing = [name for name in settings if name not in KNOBS]
    if missing:
        raise SystemExit(f"their {METHODS[algorithm][1]} has no setting for {', '.join(missing)}")
    if problem == "statlog" and rounds > STATLOG_ROWS:
        raise SystemExit(f"--rounds {rounds}: their statlog sampler draws at most {STATLOG_ROWS:,} rows")


def check_reference(reference: Path, problem: str, pools: Path | None) -> str | None:
    """The one-line reason REF (or the pools) cannot serve this problem, or None."""
    for module, _ in METHODS.values():
        if not (reference / "bandits" / "algorithms" / f"{module}.py").is_file():
            return f"{reference} has no bandits/algorithms/{module}.py: not the Showdown's deep_contextual_bandits"
    needed = POOL_FILES.get(problem)
    if needed and (pools is None or not (pools / needed).is_file()):
        return f"--problem {problem} needs --pools, a folder holding UCI's {needed}"
    return None


def python2_messages() -> None:
    """Their LinFullPost is Python 2 code: when NumPy cannot draw from a posterior (``LinAlgError``) it prints the
    error's ``message``, which Python 3's exceptions lack, before its fallback draw (β ~ N(0, I) that round). The
    attribute, given back, lets that fallback run as it did for them, their code unedited."""
    if not hasattr(np.linalg.LinAlgError, "message"):
        np.linalg.LinAlgError.message = property(str)


def fake_tensorflow() -> types.ModuleType:
    """Their data sampler's only use of TensorFlow: ``tf.gfile.Open``."""
    module = types.ModuleType("tensorflow")
    module.gfile = types.SimpleNamespace(Open=open)
    return module


def draws(problem: str, rounds: int, pools: Path | None, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What their run of ``seed`` draws: ``sample`` after ``np.random.seed(seed)``, as their example script seeds."""
    np.random.seed(seed)
    return sample(problem, rounds, pools)


def sample(problem: str, rounds: int, pools: Path | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(contexts [T, d], realised rewards [T, K], expected rewards [T, K]) from their sampler, on NumPy's global
    generator as seeded by the caller."""
    if problem == "wheel":
        from bandits.data.synthetic_data_sampler import sample_wheel_bandit_data

        table, (_, best) = sample_wheel_bandit_data(rounds, **WHEEL)
        contexts, rewards = table[:, :2], table[:, 2:]
        expected = np.tile(WHEEL["mean_v"], (rounds, 1))
        outside = best != np.argmax(WHEEL["mean_v"])  # their best action beyond δ is the quadrant's
        expected[outside, best[outside]] = WHEEL["mu_large"]
        return contexts, rewards, expected
    tensorflow = sys.modules.setdefault("tensorflow", fake_tensorflow())
    if not hasattr(tensorflow, "gfile"):  # a TensorFlow 2 (their NeuralLinear's runs) keeps it as tf.io.gfile
        tensorflow.gfile = fake_tensorflow().gfile
    from bandits.data.data_sampler import sample_mushroom_data, sample_statlog_data

    if problem == "mushroom":
        table, (best_value, _) = sample_mushroom_data(str(pools / MUSHROOM_FILE), rounds)
        contexts, rewards = table[:, :-2].astype(float), table[:, -2:].astype(float)
        edible = best_value > 0  # their optimal expected reward: 5 for an edible row, 0 (don't eat) otherwise
        expected = np.stack([np.zeros(rounds), np.where(edible, 5.0, -15.0)], axis=1)
        return contexts, rewards, expected
    contexts, rewards, _ = sample_statlog_data(str(pools / STATLOG_FILE), min(rounds, STATLOG_ROWS), shuffle_rows=True)
    return contexts, rewards, rewards  # a class reward is known, not drawn


def their_learner(algorithm: str, dim: int, n_actions: int, ours: dict):
    """Their learner with their example script's hparams, our settings mapped onto their names."""
    import importlib

    module, name = METHODS[algorithm]
    hparams = types.SimpleNamespace(context_dim=dim, num_actions=n_actions)
    for our_name, their_name in KNOBS.items():
        if our_name in ours:
            setattr(hparams, their_name, ours[our_name])
    return getattr(importlib.import_module(f"bandits.algorithms.{module}"), name)(name, hparams)


def run_reference(
    reference: Path, pools: Path | None, algorithm: str, problem: str, rounds: int, seed: int, ours: dict, record: Path
) -> dict:
    """Run ``seed`` of theirs in this fresh process; the draws go to ``record`` for ours to replay."""
    sys.path.insert(0, str(reference))
    python2_messages()
    contexts, rewards, expected = draws(problem, rounds, pools, seed)
    np.savez(record, contexts=contexts, rewards=rewards, expected=expected)
    learner = their_learner(algorithm, contexts.shape[1], rewards.shape[1], ours)
    T = len(contexts)
    chosen = np.zeros(T, np.int64)
    start = time.perf_counter()
    for t in range(T):  # their run_contextual_bandit's loop
        chosen[t] = learner.action(contexts[t])
        learner.update(contexts[t], int(chosen[t]), rewards[t, chosen[t]])
    seconds = time.perf_counter() - start
    regret = np.cumsum(expected.max(1) - expected[np.arange(T), chosen])
    return {"regret": regret.tolist(), "chosen": chosen.tolist(), "loop_seconds": seconds}


def shown(record: dict, params: dict) -> tuple[dict, dict]:
    """(the rounds ours replays, the learner's own parameters): the recorded contexts block-encoded into one block
    per action, declared as blocks when ``per_action`` (else one model reads every block)."""
    harness = {key: params.get(key, default) for key, default in SHOWN.items()}
    contexts, rewards = record["contexts"], record["rewards"]
    T, K = rewards.shape
    d = contexts.shape[1]
    arms = np.zeros((T, K, K * d))
    for a in range(K):
        arms[:, a, a * d : (a + 1) * d] = contexts
    rounds = {
        "users": np.zeros(T, np.int64),
        "arms": arms,
        "rewards": rewards,
        "expected": record["expected"],
        "n_users": 1,
        "block": d if harness["per_action"] else None,
    }
    return rounds, {k: v for k, v in params.items() if k not in SHOWN}


def describe(problem: str, pools: Path | None) -> str:
    if problem == "wheel":
        return "the Showdown's wheel (their sampler, δ = 0.95, their example's σ), their draws replayed"
    if problem == "mushroom":
        return f"the Showdown's mushroom ({pools.name}/{MUSHROOM_FILE}, their sampler), their draws replayed"
    return f"the Showdown's statlog ({pools.name if pools else ''}/{STATLOG_FILE}, their sampler), their rows replayed"


# ------------------------------------------------------------------------------- their networks, for later
# their example script's network settings: one hidden layer of 50 ReLU units, RMSProp from 0.1 decayed by half,
# retrained for 100 steps of 512 every 50 rounds after two round-robin pulls of every action
NETWORK = {
    "init_scale": 0.3,
    "layer_sizes": [50],
    "batch_size": 512,
    "activate_decay": True,
    "initial_lr": 0.1,
    "max_grad_norm": 5.0,
    "show_training": False,
    "freq_summary": 1000,
    "buffer_s": -1,
    "initial_pulls": 2,
    "reset_lr": True,
    "lr_decay_rate": 0.5,
    "training_epochs": 100,
}
# their learner (module, class, the example's settings beyond NETWORK, the model it is told to build) of each of
# ours: NeuralLinear refits its BLR heads every round and the network every 50; BootRMS trains q = 3 networks, each
# sample joining each with p; Dropout keeps each hidden unit with p = 0.8 in training and when it acts; ParamNoise
# perturbs the weights with an adaptive σ; BBB is their variational network, its noise σ fixed, its rate not reset
NETWORKS = {
    "neurallinear-ts": (
        "neural_linear_sampling_tf2",
        "NeuralLinearPosteriorSampling",
        {"training_freq": 1, "training_freq_network": 50, "a0": 6, "b0": 6, "lambda_prior": 0.25},
        (),
    ),
    "bootrms": ("bootstrapped_bnn_sampling", "BootstrappedBNNSampling", {"training_freq": 50, "p": 0.95, "q": 3}, ()),
    "dropout-ts": (
        "posterior_bnn_sampling",
        "PosteriorBNNSampling",
        {"training_freq": 50, "optimizer": "RMS", "use_dropout": True, "keep_prob": 0.8},
        ("RMSProp",),
    ),
    "paramnoise": (
        "parameter_noise_sampling",
        "ParameterNoiseSampling",
        {"training_freq": 50, "optimizer": "RMS", "noise_std": 0.05, "eps": 0.1, "d_samples": 300, "verbose": False},
        (),
    ),
    "bbb": (
        "posterior_bnn_sampling",
        "PosteriorBNNSampling",
        {
            "training_freq": 50,
            "optimizer": "RMS",
            "use_sigma_exp_transform": True,
            "cleared_times_trained": 10,
            "initial_training_steps": 100,
            "noise_sigma": 0.1,
            "reset_lr": False,
        },
        ("Variational",),
    ),
}
# the models their posterior_bnn_sampling imports beside the two it builds here: TF1 code (tf.contrib) that
# TensorFlow 2 cannot import, so the harness hands it empty stand-ins, never called
UNUSED_MODELS = {
    "bb_alpha_divergence_model": "BBAlphaDivergence",
    "bf_variational_neural_bandit_model": "BfVariationalNeuralBanditModel",
    "multitask_gp": "MultitaskGP",
}
# the modules of their TF1 graph code (ParamNoise's noise ops, BBB's network) that TensorFlow 2 runs in its v1 form
TF1_CODE = {"paramnoise": "parameter_noise_sampling", "bbb": "variational_neural_bandit_model"}
# their learners that cannot run on the port's network as it is: its LayerNorm is a Keras layer, so ParamNoise's
# second forward pass (the noisy one) builds a second one, whose variables nothing initialises
NO_LAYER_NORM = {"paramnoise"}
# their learners on a network of their own, not the port's (which alone has the LayerNorm)
OWN_NETWORK = {"bbb": "their VariationalNeuralBanditModel on tf.compat.v1, no LayerNorm"}


def their_summaries(folder: str) -> None:
    """Their networks write their graphs' summaries to the port's ``LOGDIR`` (``./logs/``, wherever the harness
    runs) and to the ``--logdir`` flag of their example script (the variational network): both to ``folder``."""
    from absl import flags

    sys.modules["bandits.algorithms.neural_bandit_model"].LOGDIR = folder
    if "logdir" not in flags.FLAGS:
        flags.DEFINE_string("logdir", folder, "where their networks write summaries")
    flags.FLAGS.mark_as_parsed()
    flags.FLAGS.logdir = folder


class HParams(types.SimpleNamespace):
    """Their settings object (TF1's ``tf.contrib.training.HParams``): attributes, and ``in`` for the ones set."""

    def __contains__(self, name: str) -> bool:
        return hasattr(self, name)


def network_run(
    reference: Path,
    pools: Path | None,
    problem: str,
    rounds: int,
    seed: int,
    algorithm: str = "neurallinear-ts",
    layer_norm: bool = True,
) -> dict:
    """One run of their learner for ``algorithm`` (``NETWORKS``) on their sampler's draws of ``seed``: its total
    reward and final regret. Their networks run as their TF2 port builds them (``neural_bandit_model_tf2``), which
    needs TensorFlow with the legacy Keras layers (``TF_USE_LEGACY_KERAS=1`` and tf_keras): it builds its layers
    with ``tf.compat.v1.layers``, which Keras 3 no longer serves. Their BootRMS, Dropout and ParamNoise import
    their TF1 network (``tf.contrib``), which TensorFlow 2 cannot build: the harness hands them the port's instead.
    ParamNoise's noise ops and BBB's variational network are TF1 graph code without ``tf.contrib``: they run on
    TensorFlow 2's ``tf.compat.v1``. The other models their posterior sampler imports (``UNUSED_MODELS``) cannot
    be imported and are never built: empty stand-ins take their place. ``layer_norm=False``: the control without
    the layer normalisation the port puts after every hidden layer (their TF1 network, the paper's, has none unless
    its ``layer_norm`` setting asks): the harness hands their ``build_layer`` an identity in place of Keras's
    ``LayerNormalization``."""
    import importlib

    import tensorflow as tf

    if not layer_norm:
        tf.keras.layers.LayerNormalization = lambda **settings: lambda layer: layer
    sys.path.insert(0, str(reference))
    sys.modules["bandits.algorithms.neural_bandit_model"] = importlib.import_module(
        "bandits.algorithms.neural_bandit_model_tf2"
    )
    for module, name in UNUSED_MODELS.items():
        sys.modules[f"bandits.algorithms.{module}"] = types.SimpleNamespace(**{name: None})
    contexts, rewards, expected = draws(problem, rounds, pools, seed)
    module, name, settings, model = NETWORKS[algorithm]
    their_module = importlib.import_module(f"bandits.algorithms.{module}")
    if algorithm in TF1_CODE:  # their TF1 graph code runs on TensorFlow 2's v1 interface
        importlib.import_module(f"bandits.algorithms.{TF1_CODE[algorithm]}").tf = tf.compat.v1
    hparams = HParams(
        num_actions=rewards.shape[1], context_dim=contexts.shape[1], activation=tf.nn.relu, **(NETWORK | settings)
    )
    T = len(contexts)
    chosen = np.zeros(T, np.int64)
    with tempfile.TemporaryDirectory(prefix="showdown-summaries-") as logs:
        their_summaries(logs)
        learner = getattr(their_module, name)(algorithm, hparams, *model)
        start = time.perf_counter()
        for t in range(T):
            chosen[t] = learner.action(contexts[t])
            learner.update(contexts[t], int(chosen[t]), rewards[t, chosen[t]])
    return totals(seed, rewards, expected, chosen, time.perf_counter() - start)


def totals(seed: int, rewards: np.ndarray, expected: np.ndarray, chosen: np.ndarray, seconds: float) -> dict:
    """A network run's record: its seed, total realised reward, final regret (expected) and loop seconds."""
    played = np.arange(len(chosen)), chosen
    regret = (expected.max(1) - expected[played]).sum()
    return {
        "seed": seed,
        "total_reward": float(rewards[played].sum()),
        "final_regret": float(regret),
        "seconds": seconds,
    }


def ours_run(reference: Path, pools: Path | None, problem: str, rounds: int, seed: int, algorithm: str, params: dict):
    """One run of ours (banditbench's ``algorithm`` with ``params``) on the draws ``network_run`` gives their learner
    for ``seed``: the same rows in the same order, so run i of each side is paired. Needs no TensorFlow."""
    from parity import replay

    sys.path.insert(0, str(reference))
    contexts, rewards, expected = draws(problem, rounds, pools, seed)
    shown_rounds, own = shown({"contexts": contexts, "rewards": rewards, "expected": expected}, params)
    result = replay(algorithm, own, shown_rounds, seed)
    return totals(seed, rewards, expected, np.asarray(result["chosen"]), result["loop_seconds"])


def main() -> None:
    """Their network learners' totals (``--algorithm``, one of ``NETWORKS``) on wheel, statlog or mushroom; with
    ``--ours``, ours on the same draws; with ``--against``, ours against theirs run by run."""
    import argparse
    import json
    import platform

    from parity import parse_settings
    from parity_verdict import compare, signed

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--reference-dir", type=Path, required=True)
    p.add_argument("--pools", type=Path, help="the folder of UCI's shuttle.trn (statlog)")
    p.add_argument("--problems", default="wheel,statlog")
    p.add_argument("--rounds", type=int, default=2000)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--first-seed", type=int, default=0, help="runs use seeds FIRST … FIRST + RUNS − 1")
    p.add_argument("--algorithm", choices=sorted(NETWORKS), default="neurallinear-ts")
    p.add_argument("--without-layer-norm", action="store_true", help="the control without their port's LayerNorm")
    p.add_argument("--ours", action="store_true", help="run banditbench's --algorithm on their draws instead")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a setting of ours (--ours)")
    p.add_argument("--against", type=Path, help="with --ours: their runs (this script's --out), compared by seed")
    p.add_argument("--margin", type=float, default=0.10, help="--against: the margin, a share of their mean")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    if args.against and not args.ours:
        raise SystemExit("--against compares ours with theirs: add --ours")
    if args.set and not args.ours:
        raise SystemExit("--set gives ours a setting: add --ours")
    if args.algorithm in NO_LAYER_NORM and not (args.ours or args.without_layer_norm):
        raise SystemExit(f"their {args.algorithm} cannot run on their port's LayerNorm: add --without-layer-norm")
    theirs = json.loads(args.against.read_text())["problems"] if args.against else {}
    settings = parse_settings(args.set)
    if args.ours:
        found = {"learner": f"ours: {args.algorithm} on their draws", "settings": settings}
    else:
        import tensorflow as tf

        module, name, hparams, _ = NETWORKS[args.algorithm]
        network = OWN_NETWORK.get(args.algorithm, "the networks of neural_bandit_model_tf2")
        learner = f"their {name} ({module}, {network})" + (
            ", their hidden layers' LayerNormalization removed" if args.without_layer_norm else ""
        )
        found = {"learner": learner, "hparams": NETWORK | hparams, "tensorflow": tf.__version__}
    found.update(machine=f"{platform.machine()} CPU", rounds=args.rounds, problems={})
    for problem in args.problems.split(","):
        reason = check_reference(args.reference_dir, problem, args.pools)
        if reason:
            raise SystemExit(reason)
        seeds = range(args.first_seed, args.first_seed + args.runs)
        if args.ours:
            runs = [
                ours_run(args.reference_dir, args.pools, problem, args.rounds, s, args.algorithm, settings)
                for s in seeds
            ]
        else:
            layer_norm = not args.without_layer_norm
            runs = [
                network_run(args.reference_dir, args.pools, problem, args.rounds, s, args.algorithm, layer_norm)
                for s in seeds
            ]
        found["problems"][problem] = runs
        print(problem, [round(r["final_regret"], 1) for r in runs], flush=True)
        if problem in theirs:
            their_regret = {run["seed"]: run["final_regret"] for run in theirs[problem]}
            both = [run for run in runs if run["seed"] in their_regret]
            if not both:
                raise SystemExit(f"{args.against} has no run of {problem} with seeds {seeds.start} … {seeds.stop - 1}")
            c = compare([r["final_regret"] for r in both], [their_regret[r["seed"]] for r in both], args.margin, True)
            found.setdefault("against", {})[problem] = c
            print(f"{problem}: ours {signed(c)} from theirs, {len(both)} runs paired by draws", flush=True)
    args.out.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
