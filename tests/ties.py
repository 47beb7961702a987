"""What floating point promises when two computations of one policy differ only in rounding (a lockstep group's
batched products beside a unit's products alone, per-block products beside the dense one): both score the arms
identically until, at some round, a sum rounds differently, and then by no more than a few float32 ulps. Training
then feeds that difference back and it grows (an Adam step divides by a gradient's own magnitude), until a near
tie flips and the histories part. So the tests assert identical choices and regret up to the round at which the
choices part, and that the scores first differed there or earlier by rounding only; a logical difference (another
member's state, a missed update) shows as a first difference far above rounding."""

from __future__ import annotations

import numpy as np
import one_unit
import torch

from banditbench.envs import Budget
from banditbench.runner.unit import EachRound, Lane, build_group

ROUNDING = 1e-5  # relative: float32 sums of a few hundred terms in another order differ by a few ulps (1.2e-7 each)


def first_difference(chosen, reference) -> int | None:
    """The first round at which two columns of choices differ, or None when they are equal."""
    differs = np.flatnonzero(np.asarray(chosen) != np.asarray(reference))
    return int(differs[0]) if differs.size else None


def relative_difference(scores, reference) -> float:
    a, b = (torch.as_tensor(s, dtype=torch.float64).flatten() for s in (scores, reference))
    return float((a - b).abs().max() / max(float(b.abs().max()), 1.0))


def assert_same_choice(choice: int, reference: int, reference_scores) -> None:
    """``choice`` equals ``reference`` (the argmax of ``reference_scores``) unless the reference's top two scores lie
    within ROUNDING of each other, where rounding may break the tie the other way."""
    if choice != reference:
        scores = torch.as_tensor(reference_scores, dtype=torch.float64).flatten()
        top = scores.topk(2).values
        gap = float(top[0] - top[1]) / max(float(scores.abs().max()), 1.0)
        assert gap <= ROUNDING, f"chose arm {choice}, not {reference}, where the top two scores are {gap:.1e} apart"


def assert_first_difference_is_rounding(score_pairs) -> None:
    """``score_pairs``: (t, scores, reference scores) of every round up to the one at which the choices part. The
    first round whose scores differ at all must differ by at most ROUNDING."""
    for t, scores, reference in score_pairs:
        difference = relative_difference(scores, reference)
        if difference > 0:
            assert difference <= ROUNDING, f"round {t}: the scores first differ by {difference:.1e}, above rounding"
            return
    raise AssertionError("the choices parted while the scores were equal")


def lockstep_score_pairs(units, member: int, dataset, stop: int):
    """(t, scores of ``member`` in the units' lockstep group, its scores when its unit runs alone) for t ≤ stop.
    The policy (a ``MemberPolicy``) must have ``scores``: what ``select`` maximises for every member, without side
    effects."""
    lanes = [Lane(unit, dataset, m) for m, unit in enumerate(units)]
    group = build_group(lanes)
    alone = Lane(units[member], dataset, 0)
    alone_group = build_group([alone])
    for lane in lanes:
        lane.start(group, None)
    alone.start(alone_group, None)
    together = EachRound(lanes, units[0].rounds, 0)
    for t, rnd in zip(together, alone.kind.env.rounds(units[0].rounds)):
        budgets, views = together.views(None)
        view = alone.kind.view(rnd, Budget())
        yield t, group.scores(views)[member], alone_group.scores([view])[0]
        if t == stop:
            return
        chosen, observed = together.feedback(group.select(views, budgets), budgets)
        group.update(views, chosen, observed)
        together.record(t, chosen, observed, budgets)
        arm = alone_group.select([view], [Budget()])[0]
        alone_group.update([view], [arm], [float(rnd.rewards[arm])])


def paired_score_pairs(policy, reference, rounds, stop: int):
    """(t, policy's scores, reference's scores) for t ≤ stop, each policy (of one unit) learning from its own
    choices."""
    for t, rnd in enumerate(rounds):
        view = rnd.view(Budget())
        yield t, one_unit.scores(policy, view), one_unit.scores(reference, view)
        if t == stop:
            return
        for each in (policy, reference):
            arm = one_unit.choose(each, view)
            one_unit.learn(each, view, arm, float(rnd.rewards[arm]))
