"""EE-Net's "f2 overturns f1" diagnostic (Ban et al. 2022, EE-Net §3: the decision maker combines f1 and f2)."""

import numpy as np
import torch

from banditbench.algos import ALGORITHMS
from banditbench.envs import PROTOCOLS, Budget
from banditbench.runner import Unit, run_unit


def test_overturn_share_is_recorded_by_the_runner(dataset):
    unit = Unit("synthetic", "linear", "eenet", ALGORITHMS["eenet"].defaults(), 0, 0, 250, None)
    share = run_unit(unit, dataset).outcome.column("diag_overturn_share").to_numpy(zero_copy_only=False)
    sampled = share[~np.isnan(share)]
    assert len(sampled) >= 3 and ((sampled >= 0) & (sampled <= 1)).all()
    assert sampled.max() > 0  # f2 at its random initialisation does change some choices


def test_a_silent_f2_never_overturns(dataset):
    env = PROTOCOLS["linear"].environment(dataset, np.random.SeedSequence(0))
    policy = ALGORITHMS["eenet"].build(
        n_users=env.n_users, n_arms=env.n_arms, dim=env.dim, seed=np.random.SeedSequence(0), params={}
    )
    policy.theta2 = torch.zeros_like(policy.theta2)  # f2 ≡ 0 with no biases: the decision is f1's argmax
    for rnd in env.rounds(40):
        view = rnd.view(Budget())
        policy.select(view, Budget())
    assert policy.diagnostics() == {"overturn_share": 0.0}
    assert np.isnan(policy.diagnostics()["overturn_share"])  # the window restarts after each sample
