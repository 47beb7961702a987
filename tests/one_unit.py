"""Play a policy of one unit round by round on single views, whichever contract it is written to: a ``Policy`` takes
one view, a ``MemberPolicy`` (here a group of one, as ``AlgorithmSpec.build`` makes it) a list of its members' views."""

from __future__ import annotations

from banditbench.algos.base import MemberPolicy
from banditbench.envs.round import Budget


def choose(policy, view, budget: Budget | None = None):
    """The policy's choice on ``view`` (member 0's for a MemberPolicy)."""
    budget = Budget() if budget is None else budget
    if isinstance(policy, MemberPolicy):
        return policy.select([view], [budget])[0]
    return policy.select(view, budget)


def learn(policy, view, chosen, reward: float) -> None:
    if isinstance(policy, MemberPolicy):
        policy.update([view], [chosen], [reward])
    else:
        policy.update(view, chosen, reward)


def scores(policy, view):
    """The scores whose largest entry ``select`` plays (member 0's for a MemberPolicy)."""
    return policy.scores([view])[0] if isinstance(policy, MemberPolicy) else policy.scores(view)


def clusters(policy):
    return policy.clusters(0) if isinstance(policy, MemberPolicy) else policy.clusters()
