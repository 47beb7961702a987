"""Algorithm registry: one line per registered name. Importing this module fills ``ALGORITHMS``."""

from banditbench.algos.base import ALGORITHMS, AlgorithmSpec, Policy, register
from banditbench.algos.linucb import LinUCB
from banditbench.algos.oracle import Oracle
from banditbench.algos.random_policy import RandomPolicy

LI2010 = "Li, Chu, Langford & Schapire, WWW 2010"

register("random", RandomPolicy, paper="baseline", description="uniformly random arm; scores nothing",
         role="baseline")
register("linucb-one", LinUCB, paper=LI2010, description="one LinUCB shared by all users", per_user=False,
         role="baseline")
register("linucb-ind", LinUCB, paper=LI2010, description="one independent LinUCB per user", per_user=True,
         role="baseline")
register("oracle", Oracle, paper="baseline", description="knows the expected rewards; regret 0",
         role="baseline")

__all__ = ["ALGORITHMS", "AlgorithmSpec", "Policy", "register"]
