"""BootRMS, the Deep Bayesian Bandits Showdown's bootstrapped networks (Riquelme, Tucker & Snoek, ICLR 2018, §3;
after Osband, Blundell, Pritzel & Van Roy's bootstrapped DQN, NeurIPS 2016).

q networks (q = 3) are trained as the Showdown's other networks (banditbench/algos/showdown_network.py), each on its
own bootstrap of the data: every new sample joins each network's data independently with probability p (0.95; the
first sample joins all). Each round one network, drawn uniformly, plays its greedy arm: Thompson sampling with the
bootstrap's spread standing in for the posterior. The draws (inclusions, the network played, minibatches) come from
the member's own generator.
"""

from __future__ import annotations

from banditbench.algos import domains as d
from banditbench.algos.showdown_network import PROBABILITY_ONE, ShowdownNetworks


class BootRMS(ShowdownNetworks):
    """q bootstrapped networks per member, stacked [M, q, p]; p may differ between the members of a group."""

    draws_inclusion = True
    member_params = ("p",)
    domains = {"q": d.COUNT, "p": PROBABILITY_ONE}

    def __init__(self, *, n_users, n_arms, dim, seeds, q: int = 3, p=0.95, **settings):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds, **settings)
        self._start(q, inclusion=p, keep_prob=1.0)
