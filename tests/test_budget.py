import numpy as np
import pytest

from banditbench.envs import ArmPool, Budget, BudgetExceeded


def test_reading_rows_spends_them():
    budget = Budget(20)
    pool = ArmPool(np.zeros((8, 3)), budget)
    pool[[1, 2, 3]]
    pool[0]
    assert budget.spent == 4 and budget.remaining == 16
    pool[:]
    assert budget.spent == 12  # a re-read arm counts again


def test_overspending_raises():
    pool = ArmPool(np.zeros((8, 3)), Budget(5))
    with pytest.raises(BudgetExceeded, match="budget is 5"):
        pool[:]


def test_a_policy_may_score_exactly_its_budget():
    budget = Budget(5)
    ArmPool(np.zeros((8, 3)), budget)[:5]
    assert budget.spent == 5 and budget.remaining == 0


def test_length_and_dimension_are_free():
    budget = Budget(1)
    pool = ArmPool(np.zeros((8, 3)), budget)
    assert (len(pool), pool.dim, budget.spent) == (8, 3, 0)


def test_closed_budget_stops_counting():
    budget = Budget(2)
    pool = ArmPool(np.zeros((8, 3)), budget)
    pool[0]
    budget.close()
    pool[:]
    assert budget.spent == 1


def test_unlimited_budget_counts_but_never_raises():
    budget = Budget(None)
    ArmPool(np.zeros((1000, 2)), budget)[:]
    assert budget.spent == 1000 and budget.remaining == float("inf")


def test_policy_cannot_alter_the_arms():
    pool = ArmPool(np.zeros((4, 2)), Budget())
    with pytest.raises(ValueError):
        pool[:][0, 0] = 1.0
