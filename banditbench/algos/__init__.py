"""Algorithm registry: one line per registered name. Importing this module fills ``ALGORITHMS``.

A class is named by its import path (``".linucb:LinUCB"``, relative to this package) and imported only
when used (banditbench/lazy.py), so that a worker running linucb never imports torch or scikit-learn;
keep it so when you add a line.

``family`` (one word: clustering, linear, neural or baseline) is the panel a regret plot by family draws the
algorithm in. ``role`` marks what the papers compare: "baseline" methods and the "proposed" ones whose improvement
over the best baseline the report states. ``capabilities`` (banditbench/algos/base.py, ``Capabilities``) says what the
algorithm needs from a run (slates, a budget it can plan within, the user id, user features, a device), so that
the runner never needs to know a name. Hyper-parameters, their defaults and their domains live on the class.
"""

from dataclasses import replace

from banditbench.algos.base import ALGORITHMS, AlgorithmSpec, Capabilities, Parameter, Policy, register

LI2010 = "Li, Chu, Langford & Schapire, WWW 2010"
ZHOU2020 = "Zhou, Li & Gu, ICML 2020 (as run by M-CNB, KDD 2024)"
GHOSH2021 = "Ghosh, Sankararaman & Ramchandran, 2021"

SHARED = Capabilities(user_id=False)  # one model for every user: the user id is not read
NEURAL = Capabilities(device=True)
SHARED_NEURAL = Capabilities(user_id=False, device=True)  # one network (or one set of networks) for every user
NOISE_AWARE = Capabilities(noise_sigma=True)  # σ in an OFUL-style radius: the data's σ by default
SLATE = Capabilities(slate=True, budget=True)

# Simple baselines
register(
    "random",
    ".random_policy:RandomPolicy",
    paper="baseline",
    role="baseline",
    family="baseline",
    capabilities=SHARED,
    description="uniformly random arm; scores nothing",
)
for _suffix, _per_user, _capabilities, _description in (
    ("one", False, SHARED, "one LinUCB shared by all users"),
    ("ind", True, None, "one independent LinUCB per user"),
):
    register(
        f"linucb-{_suffix}",
        ".linucb:LinUCB",
        paper=LI2010,
        description=_description,
        per_user=_per_user,
        role="baseline",
        family="linear",
        capabilities=_capabilities,
    )
register(
    "oracle",
    ".oracle:Oracle",
    paper="baseline",
    description="knows the expected rewards; regret 0",
    role="baseline",
    family="baseline",
    capabilities=SHARED,
)

# Clustering of bandits and multi-agent linear bandits
register(
    "club",
    ".club:CLUB",
    paper="Gentile, Li & Zappella, ICML 2014",
    role="baseline",
    family="clustering",
    description="user graph, edges cut by the parameter-distance test, clusters = connected components",
)
register(
    "sclub",
    ".sclub:SCLUB",
    paper="Li, Chen, Li & Leung, IJCAI 2019",
    role="baseline",
    family="clustering",
    description="set-based clusters that split users off and merge close clusters",
)
register(
    "cofiba",
    ".cofiba:COFIBA",
    paper="Li, Karatzoglou & Gentile, SIGIR 2016",
    role="baseline",
    family="clustering",
    description="a user graph per item cluster, items clustered by the user neighbourhoods they induce",
)
register(
    "locb",
    ".locb:LOCB",
    paper="Ban & He, NeurIPS 2021",
    role="baseline",
    family="clustering",
    description="overlapping local clusters grown around random seed users",
)
register(
    "dynucb",
    ".dynucb:DynUCB",
    paper="Nguyen & Lauw, CIKM 2014",
    role="baseline",
    family="clustering",
    description="k clusters with pooled LinUCBs; the served user moves to the nearest cluster",
)
register(
    "bass",
    ".bass:BASS",
    paper="Cherkaoui, Barlier & Colin, ICML 2025",
    role="proposed",
    family="clustering",
    description="neighbourhood sample sharing, edges cut by the relaxed ellipsoid separation test",
    capabilities=NOISE_AWARE,
)
register(
    "cmlb",
    ".cmlb:CMLB",
    paper=GHOSH2021,
    role="proposed",
    family="clustering",
    description="explore, threshold-graph clusters, collaborate on averaged rewards",
    capabilities=NOISE_AWARE,
)
register(
    "sclb",
    ".sclb:SCLB",
    paper=GHOSH2021,
    role="proposed",
    family="clustering",
    description="CMLB restarted in doubling phases with shrinking thresholds",
    capabilities=NOISE_AWARE,
)
register(
    "oful-ind",
    ".oful:IndependentOFUL",
    paper="Abbasi-Yadkori, Pál & Szepesvári, NeurIPS 2011",
    role="baseline",
    family="linear",
    description="one OFUL per user, self-normalised radius (Ghosh et al. 2021's independent baseline)",
    capabilities=NOISE_AWARE,
)
register(
    "pmlb",
    ".pmlb:PMLB",
    paper=GHOSH2021,
    role="proposed",
    family="clustering",
    description="common OFUL on averaged rewards, then personal offsets",
    capabilities=NOISE_AWARE,
)

# Neural bandits: NeuralUCB and NeuralTS with one network shared by every user, or one per user
NETWORKS = (("one", False, SHARED_NEURAL, "one network for all users"), ("ind", True, NEURAL, "one network per user"))
for _suffix, _per_user, _capabilities, _whom in NETWORKS:
    register(
        f"neuucb-{_suffix}",
        ".neuralucb:NeuralUCB",
        paper=ZHOU2020,
        description=f"NeuralUCB, {_whom}",
        per_user=_per_user,
        user_features=False,
        role="baseline",
        family="neural",
        capabilities=_capabilities,
    )
register(
    "neu-au",
    ".neuralucb:NeuralUCB",
    paper="NeuA+U baseline of M-CNB, KDD 2024 (NeuralUCB on [arm ; user])",
    description="one NeuralUCB network on arm and user features concatenated (needs user features)",
    per_user=False,
    user_features=True,
    role="baseline",
    family="neural",
    capabilities=SHARED_NEURAL,
)
ZHANG2021 = "Zhang, Zhou, Liang & Gu, ICLR 2021"
for _suffix, _per_user, _capabilities, _whom in NETWORKS:
    register(
        f"neuralts-{_suffix}",
        ".neuralts:NeuralTS",
        paper=ZHANG2021,
        description=f"NeuralTS, {_whom}: r̃ ~ N(f, ν²λ gᵀU⁻¹g/m)",
        per_user=_per_user,
        user_features=False,
        role="baseline",
        family="neural",
        capabilities=_capabilities,
    )
register(
    "neurallinear-ts",
    ".neurallinear_ts:NeuralLinearTS",
    paper="Riquelme, Tucker & Snoek, ICLR 2018 (NeuralLinear)",
    description="NeuralLinear: per-action Bayesian linear regression on a network's last layer",
    role="baseline",
    family="neural",
    capabilities=SHARED_NEURAL,
)
register(
    "eenet",
    ".eenet:EENet",
    paper="Ban, Yan, Banerjee & He, ICLR 2022",
    role="baseline",
    family="neural",
    capabilities=SHARED_NEURAL,
    description="EE-Net: exploitation network, exploration network on its gradients, f1 + f2 decision",
)
register(
    "neurallinear",
    ".neurallinear:NeuralLinear",
    paper="NeuralLinear baseline of M-CNB, KDD 2024 (Zahavy & Mannor 2019)",
    role="baseline",
    family="neural",
    capabilities=NEURAL,
    description="shared network's last hidden layer as embedding, CLUB (clustered LinUCB) on top",
)
register(
    "metaban",
    ".metaban:MetaBan",
    paper="Ban, Qi, Wei & He, arXiv 2201.13395, 2022",
    role="proposed",
    family="neural",
    capabilities=NEURAL,
    description="Meta-Ban: per-arm inferred user groups, meta-learner adapted per arm, gradient UCB",
)
register(
    "mcnb",
    ".mcnb:MCNB",
    paper="Ban, Qi, Wei, Liu & He, KDD 2024",
    role="proposed",
    family="neural",
    capabilities=NEURAL,
    description="M-CNB: per-arm inferred user clusters, meta-learner adapted per arm, gradient UCB",
)

# Slate policies of the two-stage paper (protocol twostage); the "2-" names are its two-stage variants (Alg. 1)
TWOSTAGE = "Zhang et al. 2022, Two-Stage Neural Contextual Bandits for Adaptive Personalised Recommendations"
STAGES = (
    ("", False, " (one-stage)"),
    ("2-", True, "; two-stage: topics first, then items of dynamic topic groups (Alg. 1–2)"),
)
for _prefix, _two_stage, _what in (
    ("", False, "Random: m items uniform from the iteration's sampled candidates; scores nothing"),
    ("2-", True, "2-Random: m topics uniform, then one item uniform from each; scores nothing"),
):
    register(
        f"{_prefix}slate-random",
        ".slate_random:SlateRandom",
        paper=TWOSTAGE,
        role="baseline",
        family="baseline",
        two_stage=_two_stage,
        capabilities=replace(SLATE, user_id=False),
        description=_what,
    )

for _name, _policy, _role, _family, _fixed, _what in (
    (
        "glm-ucb",
        ".slate_glm:GLMUCB",
        "baseline",
        "linear",
        {},
        "GLM: per-user GLM-UCB (Eq. 2) on LSA bag-of-words title features",
    ),
    (
        "n-glm-ucb",
        ".slate_glm:NeuralGLMUCB",
        "baseline",
        "neural",
        {"link": "logistic"},
        "N-GLM: per-user GLM-UCB (Eq. 2) on the neural item vectors",
    ),
    (
        "n-linucb",
        ".slate_glm:NeuralGLMUCB",
        "baseline",
        "neural",
        {"link": "identity"},
        "N-LinUCB (authors' code only): per-user LinUCB on the neural item vectors",
    ),
    (
        "n-greedy",
        ".slate_neural:NeuralGreedy",
        "baseline",
        "neural",
        {},
        "N-Greedy: the two-tower model's scores, no exploration",
    ),
    (
        "n-dropout-ucb",
        ".slate_neural:NeuralDropoutUCB",
        "baseline",
        "neural",
        {},
        "N-Dropout: mean + β·std over 5 MC-dropout passes",
    ),
    (
        "s-n-galm-ucb",
        ".slate_glm:SNGALM",
        "proposed",
        "neural",
        {},
        "S-N-GALM: shared additive GLM-UCB on item and user vectors (Eq. 3)",
    ),
    (
        "s-n-gblm-ucb",
        ".slate_glm:SNGBLM",
        "proposed",
        "neural",
        {},
        "S-N-GBLM: shared bilinear GLM-UCB, (d1·d2)² confidence matrix (Eq. 4)",
    ),
):
    for _prefix, _two_stage, _how in STAGES:
        register(
            _prefix + _name,
            _policy,
            paper=TWOSTAGE,
            role=_role,
            family=_family,
            description=_what + _how,
            two_stage=_two_stage,
            capabilities=SLATE,
            **_fixed,
        )

# Linear Thompson sampling (the Showdown's linear baselines)
AGRAWAL2013 = "Agrawal & Goyal, ICML 2013"
SHOWDOWN = "Riquelme, Tucker & Snoek, ICLR 2018 (LinFullPost)"
for _suffix, _per_user, _capabilities, _whom in (
    ("one", False, SHARED, "shared by all users"),
    ("ind", True, None, "per user"),
):
    register(
        f"lints-{_suffix}",
        ".thompson:LinTS",
        paper=AGRAWAL2013,
        role="baseline",
        family="linear",
        capabilities=_capabilities,
        description=f"LinTS {_whom}: θ̃ ~ N(θ̂, v²A⁻¹)",
        per_user=_per_user,
    )
    register(
        f"blr-{_suffix}",
        ".thompson:BayesianLinearRegression",
        paper=SHOWDOWN,
        role="baseline",
        family="linear",
        capabilities=_capabilities,
        per_user=_per_user,
        description=f"Bayesian linear regression {_whom}: exact normal-inverse-gamma posterior draws",
    )

# The Showdown's neural Thompson learners: one network (or q, or a posterior over one) shared by all users, trained
# as the Showdown's code
for _name, _policy, _method, _original, _what in (
    ("bootrms", ".bootstrap:BootRMS", "BootRMS", "Osband et al. 2016", "q bootstrapped networks, one drawn per round"),
    ("dropout-ts", ".dropout_ts:DropoutTS", "Dropout", "Gal & Ghahramani 2016", "greedy on one dropout pass, keep 0.8"),
    ("paramnoise", ".paramnoise:ParamNoise", "ParamNoise", "Plappert et al. 2018", "greedy, noisy weights, adaptive σ"),
    ("bbb", ".bbb:BayesByBackprop", "BBB", "Blundell et al. 2015", "greedy on one draw of a Gaussian posterior"),
):
    register(
        _name,
        _policy,
        paper=f"Riquelme, Tucker & Snoek, ICLR 2018 ({_method}; {_original})",
        role="baseline",
        family="neural",
        capabilities=SHARED_NEURAL,
        description=f"{_method}: {_what} ({_original})",
    )

# The papers' names where they differ from the registry's once case and hyphens are ignored (Meta-Ban is metaban
# already); a name that stands for several registered variants gets a hint naming each.
PAPER_NAMES = {
    "LinUCB": (("linucb-one", "one model shared by all users"), ("linucb-ind", "one model per user")),
    "NeuralUCB": (("neuucb-one", "one network"), ("neuucb-ind", "one network per user")),
    "OFUL": (("oful-ind", "one OFUL per user"),),
    "M-CNB": (("mcnb", "Ban et al., KDD 2024"),),
}

__all__ = ["ALGORITHMS", "PAPER_NAMES", "AlgorithmSpec", "Capabilities", "Parameter", "Policy", "register"]
