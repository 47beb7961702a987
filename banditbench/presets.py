"""Paper presets: each source paper's experiment as data (dataset, protocol, algorithms, rounds, seeds,
grids), run with ``banditbench run --preset NAME`` and listed by ``banditbench list presets``.

A preset is checked against the registries when it is used: if an algorithm, dataset, protocol or
hyper-parameter it names is not registered, the run stops with one line naming what is missing,
never running something else. Values come from shared/specs/*.md; where the paper is silent the
choice is ours and said in ``notes``. Best-of-grid uses ``tune-seeds`` tuning seeds disjoint from the
reported seeds (the papers tuned on the runs they report).
"""

from __future__ import annotations

from typing import Any

from banditbench.errors import UserError

MCNB = "Ban, Qi, Wei, Liu & He, Meta Clustering of Neural Bandits, KDD 2024"
METABAN = "Ban, Qi, Wei & He, Neural Collaborative Filtering Bandits via Meta Learning (Meta-Ban), 2022"
BASS = "Cherkaoui, Barlier & Colin, Adaptive Sample Sharing for Multi Agent Linear Bandits (BASS)"
GHOSH = "Ghosh, Sankararaman & Ramchandran, Collaborative Learning and Personalization in Multi-Agent " \
        "Stochastic Linear Bandits, 2021"
TWOSTAGE = "Two-Stage Neural Contextual Bandits for Adaptive Personalised Recommendations (seed 004)"

SHORT = {MCNB: "M-CNB (KDD'24)", METABAN: "Meta-Ban", BASS: "BASS", GHOSH: "Ghosh et al. 2021", TWOSTAGE: "two-stage"}

LINEAR_CLUSTERING = ["club", "cofiba", "sclub", "locb"]


# What each baseline calls the papers' regulariser λ and exploration scale α.
UCB_NAMES = {"neuucb-one": ("lam", "nu"), "neuucb-ind": ("lam", "nu"), "neu-au": ("lam", "nu"),
             "neurallinear": ("lam", "alpha")}


def ucb_grid(algos: list[str], ridge: list[float], alpha: list[float]) -> dict[str, list[float]]:
    """The "λ × α" grid every baseline of M-CNB and Meta-Ban is searched over."""
    grid = {}
    for a in algos:
        ridge_name, alpha_name = UCB_NAMES.get(a, ("ridge", "alpha"))
        grid.update({f"{a}.{ridge_name}": ridge, f"{a}.{alpha_name}": alpha})
    return grid


PRESETS: dict[str, dict[str, Any]] = {}


def preset(name: str, *, paper: str, reproduces: str, dataset: str, protocol: str, algos: list[str], rounds: int,
           seeds: int, tune_seeds: int = 0, grid: dict[str, Any] | None = None, budget: int | None = None,
           notes: str = "", env: dict[str, Any] | None = None) -> None:
    PRESETS[name] = {"paper": paper, "reproduces": reproduces, "dataset": dataset, "protocol": protocol,
                     "algos": algos, "rounds": rounds, "seeds": seeds, "tune-seeds": tune_seeds,
                     "set": grid or {}, "budget": budget, "notes": notes, "env": env or {}}


# M-CNB (mcnb.md §4–§5): T = 10000, 10 runs, baselines best of λ ∈ {0.01, 0.1, 1} × α ∈ {1e-4, …, 0.1};
# M-CNB fixed at ν = 5, γ = 0.4, S = 1.
_mcnb_baselines = LINEAR_CLUSTERING + ["neuucb-one", "neuucb-ind", "neurallinear"]
_mcnb_fixed = {"mcnb.nu": 5.0, "mcnb.gamma": 0.4, "mcnb.S": 1.0}
for _figure, _datasets in (("Fig. 2", ["amazon", "facebook", "movielens", "yelp"]),):
    for _dataset in _datasets:
        _algos = _mcnb_baselines + (["neu-au"] if _dataset in ("movielens", "yelp") else []) + ["mcnb"]
        preset(f"mcnb-{_dataset}", paper=MCNB, reproduces=f"{_figure} (recommendation, {_dataset} panel)",
               dataset=_dataset, protocol="recommendation", algos=_algos, rounds=10_000, seeds=10, tune_seeds=3,
               grid={**ucb_grid([a for a in _algos if a != "mcnb"], [0.01, 0.1, 1.0], [1e-4, 1e-3, 1e-2, 0.1]),
                     **_mcnb_fixed},
               notes="K = 10 arms, 1 positive; 50 K-means user groups; top 10000 × 10000 users × items, "
                     "SVD d = 10 (mcnb.md §5.2). NeuA+U only where user features exist (MovieLens, Yelp).")
for _figure, _datasets in (("Fig. 3", ["mnist-notmnist", "cifar10", "emnist-letters", "shuttle"]),
                           ("Fig. 4", ["mnist", "fashion-mnist", "mushroom", "magic"])):
    for _dataset in _datasets:
        _algos = _mcnb_baselines + ["mcnb"]
        preset(f"mcnb-{_dataset}", paper=MCNB, reproduces=f"{_figure} (classification, {_dataset} panel)",
               dataset=_dataset, protocol="classification", algos=_algos, rounds=10_000, seeds=10, tune_seeds=3,
               grid={**ucb_grid(_mcnb_baselines, [0.01, 0.1, 1.0], [1e-4, 1e-3, 1e-2, 0.1]), **_mcnb_fixed},
               notes="one class = one user, K = number of classes, block-encoded arms (mcnb.md §5.3).")

# Meta-Ban (metaban.md §3–§4): T = 10000, 10 runs, best of λ ∈ {0.01, 0.1, 1} × α ∈ {0.001, 0.01, 0.1, 1}.
_metaban_baselines = LINEAR_CLUSTERING + ["neuucb-one", "neuucb-ind"]
for _figure, _dataset, _protocol, _note in (
        ("Fig. 1", "movielens", "recommendation", "2000 users × 10000 items, reward 1 below 2 stars, 50 groups"),
        ("Fig. 2", "yelp", "recommendation", "2000 users × 10000 items, reward 1 below 2 stars, 50 groups"),
        ("Fig. 3", "mnist-notmnist", "classification", "20 users (classes) in 2 groups, shift-encoded arms, d + 9")):
    preset(f"metaban-{_dataset}", paper=METABAN, reproduces=f"{_figure} ({_dataset})", dataset=_dataset,
           protocol=_protocol, algos=_metaban_baselines + ["metaban"], rounds=10_000, seeds=10, tune_seeds=3,
           grid=ucb_grid(_metaban_baselines, [0.01, 0.1, 1.0], [1e-3, 1e-2, 0.1, 1.0]),
           notes=f"{_note} (metaban.md §4).")

# BASS (bass.md §3–§4): α line-searched for every method; bandpy's example grid α ∈ {0.1, 1, 5}.
_bass_algos = ["linucb-ind", "dynucb", "club", "sclub", "cmlb", "bass"]
_bass_alpha = {f"{a}.alpha": [0.1, 1.0, 5.0] for a in _bass_algos}
preset("bass-synthetic", paper=BASS, reproduces="Fig. 3 and Tables 2–3 (synthetic, M = 2 clusters)",
       dataset="synthetic", protocol="linear", algos=_bass_algos + ["oracle"], rounds=10_000, seeds=10,
       tune_seeds=3, grid=_bass_alpha,
       notes="θ_m = e_m or cos ω e_(m−1) + sin ω e_m, N(0, 1) noise, a fixed set of K/M arms x = θ_m + 0.5‖θ_m‖ξ "
             "around each θ_m (bandpy's generator): prepare with `prepare synthetic --centres bass --arm-set fixed "
             "--omega W --clusters 2 --users 18 --arms 10 --dim 5 --noise 1`, one dataset per scenario (ω). T, N "
             "and the run count are lost from the paper: bandpy's T = 10000, N = 18 and our 10 runs (bass.md §4.2).")
preset("bass-movielens", paper=BASS, reproduces="Table 4 (MovieLens column) and Fig. 7", dataset="movielens-small",
       protocol="matrix", algos=_bass_algos, rounds=10_000, seeds=10, tune_seeds=3, grid=_bass_alpha,
       notes="prepare with `prepare movielens-small` (ml-latest-small, the authors' data; `--variant 100k --source "
             "DIR` reads MovieLens-100K as a stand-in): every (user, movie) rating of the first K = 30 movies, the "
             "missing ones filled by ridge ALS (rank 10, λ = 1), σ = 1 observation noise, asynchronous pulling, no "
             "Oracle (BASS Sec. 7, App. R). N and d are lost from the paper; we take N = 20 agents drawn anew each run "
             "(the size of bandpy's synthetic N = 18, so every agent is pulled ~500 times in T = 10000) and d = 10 "
             "of the 20 one-hot genre labels (the authors' truncation to the first d; with K = 30, d = 10 keeps "
             "the linear model well below K arms while covering the frequent genres).")
for _dataset, _column in (("yahoo", "Yahoo"),):
    preset(f"bass-{_dataset}", paper=BASS, reproduces=f"Table 4 ({_column} column) and Fig. 7", dataset=_dataset,
           protocol="matrix", algos=_bass_algos, rounds=10_000, seeds=10, tune_seeds=3, grid=_bass_alpha,
           notes="every (agent, arm) reward filled by matrix factorisation, σ = 1 observation noise, no Oracle "
                 "(bass.md §4.5).")

# Ghosh et al. (ghosh.md §5): every user acts on shared contexts each step (the synchronous protocol's N
# consecutive rounds, so CLUB pulls users round-robin), 1000 pulls per user.
preset("ghosh-synthetic", paper=GHOSH, reproduces="Fig. 1(a)–(d) (synthetic clustered users)", dataset="synthetic",
       protocol="synchronous", algos=["cmlb", "club", "linucb-ind"], rounds=100_000, seeds=30, tune_seeds=3,
       grid={"cmlb.delta": 0.4, "cmlb.alpha": 0.2, "cmlb.C": 0.2, "linucb-ind.ridge": 1.0,
             "club.alpha": [0.5, 1.0, 2.0], "club.alpha2": [0.5, 1.0, 2.0]},
       notes="K = 25, d = 15, N(0, I/d) contexts; 1000 pulls for each of N = 100 users; CLUB's α, α₂ grid is "
             "ours (the paper tunes on 500 rounds without giving it); prepare one dataset per z with "
             "`prepare synthetic --protocol synchronous --z Z` (ghosh.md §5.1).")
preset("ghosh-lastfm", paper=GHOSH, reproduces="Fig. 1(e) (Last.FM, regret relative to random)", dataset="lastfm",
       protocol="round-robin", algos=["cmlb", "club", "random"], rounds=10_000, seeds=5,
       grid={"cmlb.delta": 0.3, "cmlb.alpha": 0.5, "cmlb.C": 0.5, "club.alpha": 1.0, "club.alpha2": 2.0},
       notes="prepare with `prepare lastfm --pipeline ghosh` (add --guaranteed-positive for the paper's CLUB "
             "protocol); 25 random artists per round-robin step, tf-idf tag PCA d = 25, reward 1 if the user "
             "listened; report shows regret ÷ random; the run count is not stated, 5 is ours (ghosh.md §5.2).")

# Two-stage (twostage.md §5.3): 2000 iterations, 5 trials, budget B = b · m (b = 1000 MIND, 200 MovieLens-20M,
# whose logged form is the prepared dataset movielens-logged); protocol settings users and slate_size.
_one_stage = ["slate-random", "glm-ucb", "n-glm-ucb", "n-greedy", "n-dropout-ucb", "s-n-galm-ucb", "s-n-gblm-ucb"]
_two_stage_pairs = ["slate-random", "n-greedy", "n-dropout-ucb", "s-n-galm-ucb", "s-n-gblm-ucb"]
for _dataset, _column, _b in (("mind", "mind", 1000), ("movielens-logged", "movielens-20m", 200)):
    preset(f"twostage-table4-{_column}", paper=TWOSTAGE, reproduces=f"Table 4 ({_column}, 100-user column)",
           dataset=_dataset, protocol="twostage", algos=_one_stage, rounds=2000, seeds=5, budget=_b * 5,
           env={"users": 100, "slate_size": 5},
           notes="m = 5 recommendations; the 10- and 1000-user columns: --env users=10 / users=1000.")
    preset(f"twostage-table5-{_column}", paper=TWOSTAGE, reproduces=f"Table 5 ({_column}, #Rec = 5 column)",
           dataset=_dataset, protocol="twostage",
           algos=_two_stage_pairs + [f"2-{a}" for a in _two_stage_pairs], rounds=2000, seeds=5, budget=_b * 5,
           env={"users": 100, "slate_size": 5},
           notes=f"100 users, one- vs two-stage; the #Rec = 3 and 10 columns: --env slate_size=3 --budget {_b * 3} "
                 f"(or slate_size=10 --budget {_b * 10}); p = b by default.")
    preset(f"twostage-table6-{_column}", paper=TWOSTAGE, reproduces=f"Table 6 ({_column}, no budget)",
           dataset=_dataset, protocol="twostage",
           algos=["s-n-galm-ucb", "s-n-gblm-ucb", "2-s-n-galm-ucb", "2-s-n-gblm-ucb"], rounds=2000, seeds=5,
           env={"users": 100, "slate_size": 5},
           notes="100 users, m = 5, no computational budget, p = #items / #topics; the report's select_seconds "
                 "per iteration is the Time column.")


def missing_for(name: str) -> list[str]:
    """What preset ``name`` needs that is not registered: algorithms, dataset, protocol, hyper-parameters."""
    from banditbench.algos import ALGORITHMS
    from banditbench.data import DATASETS
    from banditbench.envs import PROTOCOLS

    spec = PRESETS[name]
    algos = [a for a in spec["algos"] if a not in ALGORITHMS]
    missing = [f"algorithm{'s' * (len(algos) > 1)} {', '.join(algos)}"] if algos else []
    if spec["dataset"] not in DATASETS:
        missing.append(f"dataset {spec['dataset']}")
    if spec["protocol"] not in PROTOCOLS:
        missing.append(f"protocol {spec['protocol']}")
    elif spec["dataset"] in DATASETS and spec["protocol"] not in (DATASETS[spec["dataset"]].protocol,
                                                                  *DATASETS[spec["dataset"]].other_protocols):
        missing.append(f"dataset {spec['dataset']} under protocol {spec['protocol']} "
                       f"(it is registered for {DATASETS[spec['dataset']].protocol})")
    params = [key for key in spec["set"] if key.split(".")[0] in ALGORITHMS
              and key.split(".", 1)[1] not in ALGORITHMS[key.split(".")[0]].defaults()]
    if params:
        missing.append(f"hyper-parameter{'s' * (len(params) > 1)} {', '.join(params)}")
    return missing


def preset_settings(name: str) -> dict[str, Any]:
    """The run settings of preset ``name``, after checking that everything it needs is registered."""
    from banditbench.runner.settings import table_to_assignments

    if name not in PRESETS:
        raise UserError(f"unknown preset {name!r}; `banditbench list presets` shows them")
    missing = missing_for(name)
    if missing:
        raise UserError(f"preset {name} ({PRESETS[name]['reproduces']}) cannot run yet: not registered: "
                        f"{'; '.join(missing)}")
    spec = PRESETS[name]
    settings = {key: spec[key] for key in ("dataset", "protocol", "algos", "rounds", "seeds", "tune-seeds", "budget")}
    settings["env"] = spec.get("env", {})
    return {**settings, "set": table_to_assignments(spec["set"], f"preset {name}")}
