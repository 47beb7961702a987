"""The Showdown's BootRMS, Dropout, ParamNoise and BBB: bootstrap inclusions and the network played each round against
their stated probabilities, each network trained on its own samples only, dropout masks and the masked greedy choice,
perturbed parameters and their adaptive scale, the optimiser's steps and rates, reproducibility by seed, and a group
of members against its members alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import special, stats
from test_domains import resolve
from test_thompson import K, W, block_round, dense_round, group_of, play, random_rounds
from ties import assert_first_difference_is_rounding

from banditbench.algos import showdown_network
from banditbench.algos.bbb import BayesByBackprop
from banditbench.algos.neural import MLP
from banditbench.algos.rmsprop import rmsprop_step
from banditbench.algos.showdown_network import forward, gradient, uniform_init
from banditbench.envs.round import Budget, Round
from banditbench.errors import UserError

PROBLEM = {"n_users": 1, "n_arms": K, "dim": K * W}
NO_TRAINING = {"training_freq": 10**6}
SHORT_TRAINING = {"training_freq": 20, "train_steps": 5, "batch_size": 16}
BBB_CODE = {"sigma": "exp", "prior": "fan-in", "sample_biases": False, "local_reparam": True}  # their code's BBB


def played(name: str, params: dict, rounds: int = 60, seed: int = 0):
    policy = group_of(name, [params], [seed], **PROBLEM)
    play(policy, random_rounds(rounds))
    return policy


@pytest.mark.parametrize(("make", "width"), [(block_round, W), (dense_round, K * W)])
def test_samples_are_kept_as_their_block_and_read_back_as_played(make, width):
    """Under a block encoding a sample is kept as its arm's block (K times smaller); what training reads is the
    played vector itself (in the network's float32), past the store's first doubling."""
    rounds = random_rounds(1100, make=make, dim=W if make is block_round else K * W)
    policy = group_of("bootrms", [{"q": 2, **NO_TRAINING}], [0], **PROBLEM)
    chosen = play(policy, rounds)
    assert policy.x.shape[-1] == width and policy.x.shape[1] >= 1100
    stored = policy.inputs(torch.zeros(1, 1, dtype=torch.long), torch.arange(1100)[None])[0]
    np.testing.assert_array_equal(
        stored.numpy(), np.stack([rnd.arms[a] for rnd, a in zip(rounds, chosen)]).astype(np.float32)
    )


def test_each_sample_joins_each_networks_data_with_probability_p():
    policy = played("bootrms", {"q": 5, "p": 0.7, **NO_TRAINING}, rounds=400)
    included = policy.included[0, : policy.rounds].numpy()
    assert included[0].all()  # the first sample joins every network, as the Showdown's code
    kept, n = int(included[1:].sum()), included[1:].size
    assert stats.binomtest(kept, n, 0.7).pvalue > 1e-3
    assert stats.binomtest(kept, n, 0.95).pvalue < 1e-3  # another p is told apart


def test_each_network_trains_on_its_own_samples_only():
    policy = played("bootrms", {"q": 3, "batch_size": 64, "train_steps": 3, **NO_TRAINING})
    policy.included[0, :, 1] = False  # network 1 keeps nothing
    policy.included[0, : policy.rounds, 2] = torch.arange(policy.rounds) % 3 == 0  # network 2 every third sample
    rows = policy.minibatch_rows()[:, 0]  # [steps, q, batch]
    assert (rows[:, 2] % 3 == 0).all()
    assert policy.included[0, rows[:, 0], 0].all()
    before = policy.theta.clone()
    policy._train()
    assert torch.equal(policy.theta[0, 1], before[0, 1])  # stays at its initialisation
    assert not torch.equal(policy.theta[0, 0], before[0, 0]) and not torch.equal(policy.theta[0, 2], before[0, 2])


def test_the_network_played_is_uniform_over_the_q_networks_and_its_greedy_scores_are_played():
    policy = played("bootrms", {"q": 4}, rounds=60)  # trained once after round 50
    counts = np.bincount([int(policy.draw_networks()[0]) for _ in range(4000)], minlength=4)
    assert stats.chisquare(counts).pvalue > 1e-3
    assert stats.chisquare(counts, [1600, 800, 800, 800]).pvalue < 1e-3
    view = random_rounds(1, seed=9)[0].view(Budget())
    x = torch.tensor(view.arms[:], dtype=torch.float32)[None]
    each = [forward(policy.mlp, policy.theta[:, j], x)[0] for j in range(4)]
    for _ in range(20):  # every draw is one network's scores
        scores = policy.scores([view])[0]
        assert sum(torch.equal(scores, f) for f in each) == 1
    assert not all(torch.equal(each[0], f) for f in each[1:])  # the bootstraps made the networks differ


def test_dropout_keeps_units_with_probability_keep_prob_scaled_by_its_inverse():
    policy = group_of("dropout-ts", [{}], [0], **PROBLEM)
    (mask,) = policy.dropout_masks((1000,))
    assert torch.equal(torch.unique(mask), torch.tensor([0.0, 1.0]) / torch.tensor(0.8))
    kept = int((mask > 0).sum())
    assert stats.binomtest(kept, mask.numel(), 0.8).pvalue > 1e-3
    assert stats.binomtest(kept, mask.numel(), 0.9).pvalue < 1e-3


@pytest.mark.parametrize("keep_prob", [0.8, 1.0])
def test_dropout_plays_the_greedy_arm_of_one_masked_pass(keep_prob):
    policy = played("dropout-ts", {"keep_prob": keep_prob, "training_freq": 20, "train_steps": 20})
    view = random_rounds(1, seed=9)[0].view(Budget())
    x = torch.tensor(view.arms[:], dtype=torch.float32)[None]
    state = policy.generators[0].get_state()
    scores = policy.scores([view])
    policy.generators[0].set_state(state)
    np.testing.assert_array_equal(scores, forward(policy.mlp, policy.theta[:, 0], x, policy.dropout_masks((1,))))
    plain = forward(policy.mlp, policy.theta[:, 0], x)
    assert torch.equal(scores, plain) == (keep_prob == 1.0)  # keep 1 is the greedy network; 0.8 another pass


@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("dropout", [False, True])
def test_the_closed_form_gradient_is_autograds_with_and_without_dropout(depth, dropout):
    mlp = MLP(5, 7, depth, bias=True, gradients="batched")
    generator = torch.Generator().manual_seed(0)
    theta = torch.stack([uniform_init(mlp, generator, 0.5, torch.device("cpu")) for _ in range(3)])
    x, r = torch.randn(3, 11, 5, generator=generator), torch.randn(3, 11, generator=generator)
    masks = [(torch.rand(3, 11, 7, generator=generator) < 0.6) / 0.6 for _ in range(depth - 1)] if dropout else None
    f, g = gradient(mlp, theta, x, masks, lambda f: 2 * (f - r) / 11)
    leaf = theta.clone().requires_grad_(True)  # the reference: autograd on Σ (f − r)² / 11 of every network
    f_ref = forward(mlp, leaf, x, masks)
    ((f_ref - r).square().sum() / 11).backward()
    f_ref, g_ref = f_ref.detach(), leaf.grad
    np.testing.assert_allclose(f, f_ref, rtol=1e-5, atol=1e-6)  # float32 sums in another order
    np.testing.assert_allclose(g, g_ref, rtol=1e-5, atol=1e-6)
    assert g[:, -1].abs().min() > 0  # the output bias's gradient is the residuals' sum, never zero here


def test_rmsprop_steps_as_tensorflow_1_from_a_mean_square_of_ones():
    theta, g, s = torch.tensor([1.0, -2.0]), torch.tensor([0.5, 3.0]), torch.ones(2)
    rmsprop_step(theta, g, s, lr=0.1)
    np.testing.assert_allclose(s, 0.9 + 0.1 * np.array([0.25, 9.0]), rtol=1e-6)
    np.testing.assert_allclose(theta, [1.0, -2.0] - 0.1 * np.array([0.5, 3.0]) / np.sqrt(s.numpy()), rtol=1e-6)


@pytest.mark.parametrize("reset", [True, False])
def test_the_rate_decays_with_the_steps_of_a_training_or_of_all_of_them(reset, monkeypatch):
    rates, clipped = [], []

    def recording(theta, gradient, mean_square, lr):
        rates.append(lr)
        clipped.append(float(gradient.norm(dim=-1).max()))
        rmsprop_step(theta, gradient, mean_square, lr)

    monkeypatch.setattr(showdown_network, "rmsprop_step", recording)
    played("dropout-ts", {"lr_reset": reset, "max_grad_norm": 0.01, **SHORT_TRAINING}, rounds=40)
    steps = np.r_[0:5, 0:5] if reset else np.arange(10)
    np.testing.assert_allclose(rates, 0.1 / (1 + 0.5 * steps))
    assert max(clipped) <= 0.01 * (1 + 1e-5)  # every gradient clipped to its global norm


def test_the_networks_train_after_every_training_freq_th_sample_on_the_squared_errors_gradient(monkeypatch):
    """Training after samples 20 and 40 of 45 (``training_freq`` 20), each of its 5 steps on the gradient of the
    minibatch's mean squared error, 2 (f − r) / B."""
    trained, slopes = [], []

    def recording(mlp, theta, x, step_masks, loss):
        trained.append(policy.rounds)
        slopes.append(loss(torch.ones(x.shape[:-1])) - loss(torch.zeros(x.shape[:-1])))  # loss is linear in f
        return gradient(mlp, theta, x, step_masks, loss)

    monkeypatch.setattr(showdown_network, "gradient", recording)
    policy = group_of("bootrms", [SHORT_TRAINING], [0], **PROBLEM)
    play(policy, random_rounds(45))
    assert trained == [20] * 5 + [40] * 5
    assert all(torch.allclose(slope, torch.tensor(2 / 16)) for slope in slopes)  # batch_size 16


def test_dropout_trains_every_sample_through_a_fresh_mask_of_keep_prob(monkeypatch):
    masks = []

    def recording(mlp, theta, x, step_masks, loss):
        masks.append(step_masks[0])
        return gradient(mlp, theta, x, step_masks, loss)

    monkeypatch.setattr(showdown_network, "gradient", recording)
    played("dropout-ts", {"keep_prob": 0.8, **SHORT_TRAINING}, rounds=40)
    assert len(masks) == 10 and not torch.equal(masks[0], masks[1])  # two trainings of 5 steps, a mask per step
    units = torch.cat([mask.flatten() for mask in masks])
    assert torch.equal(torch.unique(units), torch.tensor([0.0, 1.0]) / torch.tensor(0.8))
    kept = int((units > 0).sum())
    assert stats.binomtest(kept, units.numel(), 0.8).pvalue > 1e-3
    assert stats.binomtest(kept, units.numel(), 0.75).pvalue < 1e-3


def test_rmsprop_starts_from_a_mean_square_of_ones_and_carries_it_from_one_training_to_the_next(monkeypatch):
    slots = []

    def recording(theta, gradient, mean_square, lr):
        slots.append(mean_square.clone())
        rmsprop_step(theta, gradient, mean_square, lr)

    monkeypatch.setattr(showdown_network, "rmsprop_step", recording)
    played("bootrms", SHORT_TRAINING, rounds=40)
    assert torch.equal(slots[0], torch.ones_like(slots[0]))
    assert (slots[5] != 1).all()  # the second training's first step starts where the first training ended


@pytest.mark.parametrize(
    "name, params",
    [("bootrms", {}), ("dropout-ts", {}), ("paramnoise", {}), ("bbb", {}), ("bbb", BBB_CODE)],
)
def test_choices_are_reproducible_by_seed_and_differ_between_seeds(name, params):
    def choices(seed):
        return play(group_of(name, [{**SHORT_TRAINING, **params}], [seed], **PROBLEM), random_rounds(80))

    assert choices(3) == choices(3)
    assert choices(3) != choices(4)


def test_the_first_rounds_play_every_arm_in_turn():
    assert play(group_of("bootrms", [{}], [0], **PROBLEM), random_rounds(2 * K))[: 2 * K] == [0, 1, 2, 0, 1, 2]


@pytest.mark.parametrize(
    "name,params",
    [
        ("bootrms", [{"p": 0.9}, {"p": 0.5}, {"p": 0.5}]),
        ("dropout-ts", [{"keep_prob": 0.8}, {"keep_prob": 0.5}, {"keep_prob": 1.0}]),
        ("paramnoise", [{"noise_std": 0.05}, {"noise_std": 0.2}, {"eps": 0.3}]),
        ("bbb", [{"noise_sigma": 0.1}, {"noise_sigma": 0.5}, {"noise_sigma": 1.0}]),
        ("bbb", [{**BBB_CODE, "noise_sigma": s} for s in (0.1, 0.5, 1.0)]),
    ],
)
def test_a_group_chooses_as_its_members_alone(name, params):
    """Equal choices, or a first difference of the scores within rounding (tests/ties.py)."""
    seeds = [0, 1, 2]
    params = [{**SHORT_TRAINING, **p} for p in params]
    group = group_of(name, params, seeds, **PROBLEM)
    alone = [group_of(name, [p], [s], **PROBLEM) for p, s in zip(params, seeds)]
    streams = [random_rounds(100, block_round, seed=10 + m) for m in range(3)]
    pairs, parted = [[] for _ in seeds], [False] * 3
    for t in range(100):
        rounds = [stream[t] for stream in streams]
        views = [rnd.view(Budget()) for rnd in rounds]
        states = [g.get_state() for g in group.generators]
        together = group.scores(views) if t >= 2 * K else None
        for g, state in zip(group.generators, states):  # select draws the same numbers again
            g.set_state(state)
        chosen = group.select(views, [Budget()] * 3)
        group.update(views, chosen, [float(rnd.rewards[arm]) for rnd, arm in zip(rounds, chosen)])
        for m, (policy, view, rnd, arm) in enumerate(zip(alone, views, rounds, chosen)):
            if parted[m]:
                continue
            if together is not None:
                state = policy.generators[0].get_state()
                pairs[m].append((t, together[m], policy.scores([view])[0]))
                policy.generators[0].set_state(state)
            own = policy.select([view], [Budget()])[0]
            policy.update([view], [own], [float(rnd.rewards[own])])
            parted[m] = own != arm
    for m, policy in enumerate(alone):
        if parted[m]:
            assert_first_difference_is_rounding(pairs[m])
        else:
            np.testing.assert_allclose(learned(group)[m], learned(policy)[0], rtol=1e-5, atol=1e-6)


def learned(policy) -> torch.Tensor:
    """The parameters a policy trains [M, ...]: its networks, or Bayes by Backprop's μ and ρ."""
    return policy.posterior if isinstance(policy, BayesByBackprop) else policy.theta


@pytest.mark.parametrize(
    "text, message",
    [
        ("bootrms.p=1.5", "p must be a finite real number in (0, 1]"),
        ("bootrms.q=0", "q must be an integer ≥ 1"),
        ("dropout-ts.keep_prob=0", "keep_prob must be a finite real number in (0, 1]"),
        ("dropout-ts.lr=-0.1", "lr must be a finite real number > 0"),
        ("bbb.noise_sigma=0", "noise_sigma must be a finite real number > 0"),
        ("bbb.prior=normal", "prior must be one of unit, fan-in"),
        ("bbb.sigma=relu", "sigma must be one of softplus, exp"),
        ("bbb.init_std=-1", "init_std must be a finite real number ≥ 0"),
    ],
)
def test_bad_hyper_parameters_are_refused_in_one_line(text, message):
    with pytest.raises(UserError) as refused:
        resolve(text)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_paramnoise_plays_the_greedy_arm_of_its_perturbed_parameters():
    policy = played("paramnoise", {"noise_std": 0.3, **SHORT_TRAINING})
    view = random_rounds(1, seed=9)[0].view(Budget())
    x = torch.tensor(view.arms[:], dtype=torch.float32)[None]
    state = policy.generators[0].get_state()
    scores = policy.scores([view])
    policy.generators[0].set_state(state)
    noise = torch.randn(policy.mlp.p, generator=policy.generators[0])
    sigma = float(policy.noise_std[0])
    np.testing.assert_array_equal(scores, forward(policy.mlp, policy.theta[:, 0] + sigma * noise, x))
    assert not torch.equal(scores, forward(policy.mlp, policy.theta[:, 0], x))


@pytest.mark.parametrize("noise_std, grows", [(1e-6, True), (50.0, False)])
def test_paramnoise_widens_its_noise_while_the_kl_is_below_delta_and_narrows_it_above(noise_std, grows):
    policy = played("paramnoise", {"noise_std": noise_std, **NO_TRAINING})
    policy._adapt_noise()
    np.testing.assert_allclose(policy.noise_std, noise_std * 1.01 if grows else noise_std / 1.01)
    np.testing.assert_allclose(policy.eps, 0.1 * 0.99)


@pytest.mark.parametrize("below", [True, False])
def test_paramnoise_compares_the_kl_with_delta_of_eps_and_the_number_of_arms(below, monkeypatch):
    """δ = −log(1 − ε + ε/K): 0.069 at ε = 0.1 and K = 3, where −log(1 − ε) would be 0.105."""
    policy = played("paramnoise", {"eps": 0.1, **NO_TRAINING})
    delta = -np.log(1 - 0.1 + 0.1 / K)
    monkeypatch.setattr(policy, "kl_divergence", lambda: np.array([delta * (0.99 if below else 1.01)]))
    policy._adapt_noise()
    np.testing.assert_allclose(policy.noise_std, 0.05 * 1.01 if below else 0.05 / 1.01)


@pytest.mark.parametrize("rounds, shown", [(60, K), (10, K), (60, K - 1)])
def test_paramnoise_kl_is_from_the_plain_networks_softmax_to_the_perturbed_ones(rounds, shown):
    """KL(p ‖ q) with p the softmax over a round's arms of f(·; θ) and q of f(·; θ̃), clamped at 0 and averaged over
    a minibatch of the reservoir's rounds drawn with replacement, then one perturbation: recomputed here in numpy.
    The minibatch reads only the slots filled so far (10 rounds of 30 slots), and a round of fewer arms than the
    policy's K only the arms it showed."""
    params = {"noise_std": 0.5, "kl_samples": 30, **SHORT_TRAINING}
    policy = group_of("paramnoise", [params], [0], n_users=1, n_arms=K, dim=W)  # plain contexts, a plain reservoir
    dense = random_rounds(rounds, dense_round)
    play(policy, [Round(r.t, r.user, r.arms[:shown], r.rewards[:shown], r.expected[:shown]) for r in dense])
    state = policy.generators[0].get_state()
    kl = policy.kl_divergence()[0]
    policy.generators[0].set_state(state)
    rows = torch.randint(min(rounds, 30), (30,), generator=policy.generators[0])
    arms = policy.reservoir[0, rows][None, :, :shown]  # [1, S, K, d]
    plain = forward(policy.mlp, policy.theta[:, 0, None], arms)[0].double().numpy()
    noisy = forward(policy.mlp, policy.perturbed()[:, None], arms)[0].double().numpy()
    log_p, log_q = special.log_softmax(plain, axis=-1), special.log_softmax(noisy, axis=-1)
    forward_kl = np.maximum((np.exp(log_p) * (log_p - log_q)).sum(-1), 0).mean()
    reverse_kl = np.maximum((np.exp(log_q) * (log_q - log_p)).sum(-1), 0).mean()
    if shown == K:  # the two directions are told apart here (over two arms they nearly agree)
        assert abs(forward_kl - reverse_kl) > 0.01 * forward_kl
    np.testing.assert_allclose(kl, forward_kl, rtol=1e-9)


def test_paramnoise_on_blocks_chooses_as_on_the_same_vectors_undeclared():
    """Its reservoir keeps each arm's block under a block encoding and puts them back for the KL's minibatch: the
    choices, noise scale and reservoir read back are those of the same arm vectors given without a block."""
    block_rounds = random_rounds(150)
    plain_rounds = [Round(r.t, r.user, r.arms, r.rewards, r.expected) for r in block_rounds]
    params = {"kl_samples": 40, **SHORT_TRAINING}
    blocks, plain = (group_of("paramnoise", [params], [3], **PROBLEM) for _ in range(2))
    assert play(blocks, block_rounds) == play(plain, plain_rounds)
    np.testing.assert_array_equal(blocks.noise_std, plain.noise_std)
    np.testing.assert_array_equal(blocks.kl_divergence(), plain.kl_divergence())  # the same rows, θ̃ and arms
    assert blocks.reservoir.shape[-1] == W and plain.reservoir.shape[-1] == K * W
    # each slot holds arm a's block a
    torch.testing.assert_close(blocks.reservoir[0], plain.reservoir[0].view(40, K, K, W)[:, range(K), range(K)])


def test_paramnoise_keeps_a_uniform_sample_of_past_rounds():
    policy = group_of("paramnoise", [{"kl_samples": 40, **NO_TRAINING}] * 5, list(range(5)), **PROBLEM)
    policy._build_once(None)  # plain arm vectors
    for t in range(1000):
        policy._keep_arms(torch.full((5, K, K * W), float(t)))
    kept = policy.reservoir[:, :, 0, 0].flatten().numpy()
    assert len(set(kept[:40])) == 40 and policy.offered.all()
    assert stats.kstest(kept, stats.randint(0, 1000).cdf).pvalue > 1e-3
    assert stats.kstest(kept, stats.randint(500, 1000).cdf).pvalue < 1e-3  # the later rounds alone are told apart


def test_paramnoise_reservoir_of_one_round_keeps_either_of_two_rounds_half_the_time():
    """Algorithm R draws round t's slot from U{0..t}: with one slot, the second round replaces the first with
    probability ½ (a slot from U{0..t−1} would replace it always)."""
    members = 200
    policy = group_of("paramnoise", [{"kl_samples": 1, **NO_TRAINING}] * members, list(range(members)), **PROBLEM)
    policy._build_once(None)
    for t in range(2):
        policy._keep_arms(torch.full((members, K, K * W), float(t)))
    replaced = int((policy.reservoir[:, 0, 0, 0] == 1.0).sum())
    assert 70 < replaced < 130  # Binomial(200, ½): 4 standard deviations either side
