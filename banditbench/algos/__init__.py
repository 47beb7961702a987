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

# Clustering of bandits and multi-agent linear bandits (issue 4)
from banditbench.algos.bass import BASS  # noqa: E402
from banditbench.algos.club import CLUB  # noqa: E402
from banditbench.algos.cmlb import CMLB  # noqa: E402
from banditbench.algos.pmlb import PMLB  # noqa: E402
from banditbench.algos.sclb import SCLB  # noqa: E402

GHOSH2021 = "Ghosh, Sankararaman & Ramchandran 2021 (seed 002)"
register("club", CLUB, paper="Gentile, Li & Zappella, ICML 2014",
         description="user graph, edges cut by the parameter-distance test, clusters = connected components")
register("bass", BASS, paper="Cherkaoui, Barlier & Colin, ICML 2025 (seed 003)",
         description="neighbourhood sample sharing, edges cut by the relaxed ellipsoid separation test")
register("cmlb", CMLB, paper=GHOSH2021, description="explore, threshold-graph clusters, collaborate on averaged rewards")
register("sclb", SCLB, paper=GHOSH2021, description="CMLB restarted in doubling phases with shrinking thresholds")
register("pmlb", PMLB, paper=GHOSH2021, description="common OFUL on averaged rewards, then personal offsets")
from banditbench.algos.dynucb import DynUCB  # noqa: E402

register("dynucb", DynUCB, paper="Nguyen & Lauw, CIKM 2014",
         description="k clusters with pooled LinUCBs; the served user moves to the nearest cluster")
from banditbench.algos.locb import LOCB  # noqa: E402

register("locb", LOCB, paper="Ban & He, NeurIPS 2021",
         description="overlapping local clusters grown around random seed users")
from banditbench.algos.sclub import SCLUB  # noqa: E402

register("sclub", SCLUB, paper="Li, Chen, Li & Leung, IJCAI 2019",
         description="set-based clusters that split users off and merge close clusters")
