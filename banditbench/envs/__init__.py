"""Protocol registry: how a prepared dataset becomes a stream of Rounds."""

from dataclasses import dataclass

from banditbench.envs.linear import LinearEnvironment
from banditbench.envs.synchronous import SynchronousEnvironment
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
    "synchronous": ProtocolInfo(
        "synchronous",
        SynchronousEnvironment,
        "every step all N users act on the same K fresh contexts ~ N(0, I/d), independent noise per user",
        "Ghosh et al. 2021 §3, §6.1 (seed 002); BASS synchronous pulling (seed 003, theory)",
    ),
}

__all__ = ["PROTOCOLS", "ProtocolInfo", "ArmPool", "Budget", "BudgetExceeded", "Round", "RoundView"]
