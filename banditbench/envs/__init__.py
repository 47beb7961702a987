"""Protocol registry: how a prepared dataset becomes a stream of Rounds."""

from dataclasses import dataclass

from banditbench.envs.linear import LinearEnvironment
from banditbench.envs.nonlinear import CosineEnvironment
from banditbench.envs.round import ArmPool, Budget, BudgetExceeded, Round, RoundView


@dataclass(frozen=True)
class ProtocolInfo:
    name: str
    environment: type
    description: str
    paper: str


PROTOCOLS = {
    "linear": ProtocolInfo(
        "linear",
        LinearEnvironment,
        "one random user per round, K fresh contexts ~ N(0, I/d), reward ⟨θ_user, x⟩ + N(0, σ²)",
        "Ghosh et al. 2021 §6.1 (seed 002); BASS asynchronous rounds (seed 003)",
    ),
    "cosine": ProtocolInfo(
        "cosine",
        CosineEnvironment,
        "as linear, but reward cos(3⟨θ_user, x⟩) + N(0, σ²): non-linear, clustered users",
        "NeuralUCB's cos(3aᵀx) (Zhou et al. 2020 §7.1) on the clustered users of seed 002",
    ),
}

__all__ = ["PROTOCOLS", "ProtocolInfo", "ArmPool", "Budget", "BudgetExceeded", "Round", "RoundView"]
