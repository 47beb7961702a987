"""Dropout, the Deep Bayesian Bandits Showdown's dropout Thompson sampling (Riquelme, Tucker & Snoek, ICLR 2018, §3;
after Gal & Ghahramani's dropout as a Bayesian approximation, ICML 2016).

One network, trained as the Showdown's other networks (banditbench/algos/showdown_network.py) with dropout on: every
hidden unit of every sample of a minibatch is kept with probability keep_prob (0.8) and scaled by 1/keep_prob. Each
round one forward pass with a fresh mask, drawn from the member's generator, scores the arms and the greedy arm is
played: the mask is the posterior draw. With keep_prob = 1 it is the greedy network.
"""

from __future__ import annotations

from banditbench.algos.showdown_network import PROBABILITY_ONE, ShowdownNetworks


class DropoutTS(ShowdownNetworks):
    """One network per member, stacked [M, 1, p]; keep_prob may differ between the members of a group."""

    draws_masks = True
    member_params = ("keep_prob",)
    domains = {"keep_prob": PROBABILITY_ONE}

    def __init__(self, *, n_users, n_arms, dim, seeds, keep_prob=0.8, **settings):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds, **settings)
        self._start(1, inclusion=1.0, keep_prob=keep_prob)
