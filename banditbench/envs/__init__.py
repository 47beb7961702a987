"""Protocol registry: how a prepared dataset becomes a stream of Rounds.

An environment class is named by its import path (``".linear:LinearEnvironment"``, relative to this
package) and imported only when a unit of its protocol runs (banditbench/lazy.py), so that a worker on
the linear protocol never imports scipy.stats; keep it so when you add a protocol.
"""

from dataclasses import dataclass

from banditbench.envs.round import ArmPool, Budget, BudgetExceeded, Round, RoundView
from banditbench.lazy import resolve


@dataclass(frozen=True)
class ProtocolInfo:
    name: str
    source: type | str  # the environment class, or ".module:Class" imported when first needed
    description: str
    paper: str
    slate: bool = False  # rounds ask for a slate of items (a list of ids), scored by runner/slate.py
    logged: bool = False  # rounds replay a log: a policy learns only from the events kept (runner/logged.py)

    @property
    def environment(self) -> type:
        return resolve(self.source, "banditbench.envs")


PROTOCOLS = {
    "linear": ProtocolInfo(
        "linear",
        ".linear:LinearEnvironment",
        "one random user per round, K fresh contexts ~ N(0, I/d), reward ⟨θ_user, x⟩ + N(0, σ²)",
        "Ghosh et al. 2021 §6.1; Cherkaoui et al. 2025 (BASS), asynchronous rounds",
    ),
    "synchronous": ProtocolInfo(
        "synchronous",
        ".synchronous:SynchronousEnvironment",
        "every step all N users act on the same K fresh contexts ~ N(0, I/d), independent noise per user",
        "Ghosh et al. 2021 §3, §6.1; Cherkaoui et al. 2025 (BASS), synchronous pulling",
    ),
    "cosine": ProtocolInfo(
        "cosine",
        ".nonlinear:CosineEnvironment",
        "as linear, but reward cos(3⟨θ_user, x⟩) + N(0, σ²): non-linear, clustered users",
        "NeuralUCB's cos(3aᵀx) (Zhou et al. 2020 §7.1) on the clustered users of Ghosh et al. 2021",
    ),
}

# Protocols named differently in prepared manifests: logged impressions are prepared for "ips-simulator" and run
# under the two-stage protocol of Zhang et al. 2022.
PROTOCOL_ALIASES = {"ips-simulator": "twostage"}

__all__ = ["PROTOCOLS", "PROTOCOL_ALIASES", "ProtocolInfo", "ArmPool", "Budget", "BudgetExceeded", "Round", "RoundView"]

PROTOCOLS["recommendation"] = ProtocolInfo(
    "recommendation",
    ".recommendation:RecommendationEnvironment",
    "a K-means user group (or user) per round; K = 10 arms: 1 item it liked (rating > 4) + 9 it rated otherwise, "
    "SVD item features; modes paper | metaban-code | mcnb-code",
    "Ban et al. 2024 (M-CNB) §5.2; Ban et al. 2022 (Meta-Ban) §4.1",
)

PROTOCOLS["classification"] = ProtocolInfo(
    "classification",
    ".classification:ClassificationEnvironment",
    "one instance per round, arm a = class a (reward 1 iff right), block (d·K) or shift (d+K−1) contexts; "
    "user = class, which tells per-user learners the label",
    "Ban et al. 2024 (M-CNB) §5.3; Ban et al. 2022 (Meta-Ban) §4.3; NeuralUCB's Bandit_multi",
)

PROTOCOLS["round-robin"] = ProtocolInfo(
    "round-robin",
    ".roundrobin:RoundRobinEnvironment",
    "real users pulled in turn; each step all users see the same 25 random artists (reward 1 if listened); "
    "option: one listened artist guaranteed per round (the paper's CLUB protocol)",
    "Ghosh et al. 2021 §6.2, Fig. 1(e), Last.FM",
)

PROTOCOLS["twostage"] = ProtocolInfo(
    "twostage",
    ".twostage:TwoStageEnvironment",
    "logged data (mind, movielens-logged): a user of the trial's set per iteration, a slate of m items, clicks "
    "from the IPS simulator (threshold + 10 % flips); budget B items scored per iteration; --env users, slate_size",
    "Two-stage neural contextual bandits (Zhang et al. 2022) §4–§5",
    slate=True,
)

PROTOCOLS["matrix"] = ProtocolInfo(
    "matrix",
    ".matrix:MatrixEnvironment",
    "agents = N rows of a dense reward table (drawn per run), arms = its K columns with fixed features; "
    "observation = table value + σ·N(0, 1), regret = row max − chosen value; async (uniform agent) or sync pulling",
    "Cherkaoui et al. 2025 (BASS) Sec. 7 and App. R, real data (MovieLens, Yahoo!)",
)

PROTOCOLS["rewards-table"] = ProtocolInfo(
    "rewards-table",
    ".rewards_table:RewardsTableEnvironment",
    "one row per round: a context and a reward for every action (drawn once when prepared), block contexts (a "
    "linear model per action); no users; regret against the row's best expected reward; --env contexts: rows per run",
    "Riquelme, Tucker & Snoek 2018 (Deep Bayesian Bandits Showdown) §4",
)
PROTOCOLS["logged"] = ProtocolInfo(
    "logged",
    ".logged:LoggedEnvironment",
    "the log's events in order; the policy learns from an event only when it picks the logged arm (replay) and, on "
    "a non-uniform log, the event passes rejection sampling; off-policy estimates (IPS, SNIPS, DM, DR) of its choices",
    "Li, Chu, Langford & Wang, WSDM 2011; Dudík, Erhan, Langford & Li, UAI 2012",
    logged=True,
)
