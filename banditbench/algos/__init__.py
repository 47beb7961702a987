"""Algorithm registry: one line per registered name. Importing this module fills ``ALGORITHMS``."""

from banditbench.algos.base import ALGORITHMS, AlgorithmSpec, Policy, register
from banditbench.algos.eenet import EENet
from banditbench.algos.linucb import LinUCB
from banditbench.algos.mcnb import MCNB
from banditbench.algos.metaban import MetaBan
from banditbench.algos.neurallinear import NeuralLinear
from banditbench.algos.neuralucb import NeuralUCB
from banditbench.algos.oracle import Oracle
from banditbench.algos.random_policy import RandomPolicy

LI2010 = "Li, Chu, Langford & Schapire, WWW 2010"

register("random", RandomPolicy, paper="baseline", description="uniformly random arm; scores nothing")
register("linucb-one", LinUCB, paper=LI2010, description="one LinUCB shared by all users", per_user=False)
register("linucb-ind", LinUCB, paper=LI2010, description="one independent LinUCB per user", per_user=True)
register("oracle", Oracle, paper="baseline", description="knows the expected rewards; regret 0")
ZHOU2020 = "Zhou, Li & Gu, ICML 2020 (as run by M-CNB, KDD 2024)"
register("neuucb-one", NeuralUCB, paper=ZHOU2020, description="NeuralUCB, one network for all users",
         per_user=False, user_features=False)
register("neuucb-ind", NeuralUCB, paper=ZHOU2020, description="NeuralUCB, one network per user",
         per_user=True, user_features=False)
register("mcnb", MCNB, paper="Ban, Qi, Wei, Liu & He, KDD 2024 (seed 000)",
         description="M-CNB: per-arm inferred user clusters, meta-learner adapted per arm, gradient UCB")
register("metaban", MetaBan, paper="Ban, Qi, Wei & He, arXiv 2201.13395 (seed 001)",
         description="Meta-Ban: per-arm inferred user groups, meta-learner adapted per arm, gradient UCB")
register("neu-au", NeuralUCB, paper="NeuA+U baseline of M-CNB, KDD 2024 (NeuralUCB on [arm ; user])",
         description="one NeuralUCB network on arm and user features concatenated (needs user features)",
         per_user=False, user_features=True)
register("eenet", EENet, paper="Ban, Yan, Banerjee & He, ICLR 2022",
         description="EE-Net: exploitation network, exploration network on its gradients, f1 + f2 decision")
register("neurallinear", NeuralLinear, paper="NeuralLinear baseline of M-CNB, KDD 2024 (Zahavy & Mannor 2019)",
         description="shared network's last hidden layer as embedding, CLUB (clustered LinUCB) on top")

__all__ = ["ALGORITHMS", "AlgorithmSpec", "Policy", "register"]
