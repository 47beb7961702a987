"""Dataset registry: each family is one module here; ``banditbench list`` and ``prepare`` read this table."""

from dataclasses import dataclass

from banditbench.data.prepared import PreparedDataset, load_dataset


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    description: str
    paper: str
    protocol: str


DATASETS = {
    "synthetic": DatasetInfo(
        "synthetic",
        "clustered linear users, θ on the unit sphere, cluster sizes ∝ i^(−z); built in, no download",
        "Ghosh et al. 2021 §6.1 (seed 002); BASS (seed 003)",
        "linear",
    ),
    "synthetic-cosine": DatasetInfo(
        "synthetic-cosine",
        "the same clustered users with the non-linear reward cos(3⟨θ, x⟩) (`prepare synthetic --protocol cosine`)",
        "NeuralUCB §7.1 reward (Zhou et al. 2020) on seed 002's users",
        "cosine",
    ),
}

__all__ = ["DATASETS", "DatasetInfo", "PreparedDataset", "load_dataset"]
