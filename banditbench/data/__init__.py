"""Dataset registry: each family is one module here; ``banditbench list`` and ``prepare`` read this table."""

from dataclasses import dataclass

from banditbench.data.prepared import PreparedDataset, load_dataset


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    description: str
    paper: str
    protocol: str  # the protocol it is prepared for by default
    other_protocols: tuple[str, ...] = ()  # protocols a prepare option can choose instead


DATASETS = {
    "synthetic": DatasetInfo(
        "synthetic",
        "clustered linear users, θ on the unit sphere, cluster sizes ∝ i^(−z); built in, no download",
        "Ghosh et al. 2021 §6.1 (seed 002); BASS (seed 003)",
        "linear",
        ("synchronous",),
    ),
    "synthetic-cosine": DatasetInfo(
        "synthetic-cosine",
        "the same clustered users with the non-linear reward cos(3⟨θ, x⟩) (`prepare synthetic --protocol cosine`)",
        "NeuralUCB §7.1 reward (Zhou et al. 2020) on seed 002's users",
        "cosine",
    ),
}

__all__ = ["DATASETS", "DatasetInfo", "PreparedDataset", "load_dataset"]

DATASETS["movielens"] = DatasetInfo(
    "movielens",
    "MovieLens 100k | 1m | 20m | 25m (default 25m): top users × items by count, positive = rating > 4, "
    "10-d SVD features, 50 K-means user groups",
    "Harper & Konstan 2015; M-CNB §5.2, Meta-Ban §4.1",
    "recommendation",
)

from banditbench.data.classification import FAMILIES as _CLASSIFICATION  # noqa: E402

for _family in _CLASSIFICATION.values():
    DATASETS[_family.name] = DatasetInfo(_family.name, _family.description, "M-CNB §5.3; Meta-Ban §4.3",
                                         "classification")

DATASETS["mnist-notmnist"] = DatasetInfo(
    "mnist-notmnist", "MNIST + notMNIST: 20 users (classes of either) in 2 groups, shift encoding d + 9",
    "Meta-Ban §4.3 (seed 001); M-CNB §5.3", "classification")

DATASETS["facebook"] = DatasetInfo(
    "facebook", "SNAP ego-Facebook, 4039 people, 88,234 links: a link is a positive, non-links negatives; "
    "SVD features, K-means groups", "McAuley & Leskovec 2012; M-CNB §5.2", "recommendation")

DATASETS["lastfm"] = DatasetInfo(
    "lastfm", "Last.fm HetRec 2011, 1892 users × 17632 artists: a listen is a positive; --pipeline svd | ghosh "
    "(tag tf-idf + PCA-25 contexts, 25 random artists per round-robin step)", "Cantador et al. 2011; Ghosh et al. "
    "2021 §6.2", "recommendation", other_protocols=("round-robin",))

DATASETS["yelp"] = DatasetInfo(
    "yelp", "Yelp Open Dataset reviews (terms-gated, --source): positive = 5 stars, SVD features, K-means groups",
    "M-CNB §5.2; Meta-Ban §4.1", "recommendation")
DATASETS["amazon"] = DatasetInfo(
    "amazon", "Amazon ratings-only file, --version 2014 | 2018 | 2023 and --category (default 2018 AMAZON_FASHION)",
    "Ni, Li & McAuley 2019; M-CNB §5.2", "recommendation")

DATASETS["mind"] = DatasetInfo(
    "mind", "MIND small | large: news (subcategory = topic) and impression logs with clicks, for an IPS simulator",
    "Wu et al. 2020; two-stage neural CB (seed 004)", "ips-simulator", ("twostage",))
DATASETS["movielens-logged"] = DatasetInfo(
    "movielens-logged", "MovieLens-20M in MIND's form: rating ≥ 4 positive, first genre = topic, time split",
    "two-stage neural CB (seed 004), movielen2mind", "ips-simulator", ("twostage",))
DATASETS["authors-pools"] = DatasetInfo(
    "authors-pools", "the Ban-family repositories' preprocessed arrays (<name>_<U>users_<I>items_entry.npy and "
    "feature arrays, --source DIR) served in the authors' code mode (mcnb-code | metaban-code)",
    "M-CNB §5.2 (banyikun/MCNB); Meta-Ban §4.1", "recommendation")
