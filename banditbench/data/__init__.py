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
}

__all__ = ["DATASETS", "DatasetInfo", "PreparedDataset", "load_dataset"]
