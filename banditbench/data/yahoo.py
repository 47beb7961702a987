"""Yahoo! Learning to Rank Challenge, set 2, as a dense query × arm reward table for the matrix protocol
(``envs/matrix.py``).

BASS (Cherkaoui, Barlier & Colin, Sec. 7 and App. R) uses the challenge data (Chapelle & Chang 2010): "for each
query, [~] documents are received, represented by sparse features vectors of dimension [700] and their
corresponding reward (from [0] to [4]). We consider the queries as agents and the documents as arms; to reduce
their cardinality, we perform the k-means algorithm and retained only [K] arms [...] filling the missing rewards
with the same matrix-factorization approach". The authors' loader reads ``set2.train.txt`` (1,266 queries), and:

1. clusters the distinct document vectors (absent features are 0) with K-means into ``--clusters`` (100) groups;
2. makes each document's item its cluster label, and keeps the first document of each (query, item) pair;
3. fills every missing (query, item) reward by matrix factorisation, as for MovieLens;
4. keeps the items < K as the arms, arm k being the K-means centre k truncated to its first d coordinates.

The factorisation is :func:`~banditbench.data.completion.als`, the one ``movielens-small`` uses, with the same
options; predictions are clipped to the relevance scale [0, 4] and observed relevances kept. The authors' loader
rounds the predictions to integers: ``--compat bandpy`` does too (it has no index quirk to reproduce). K-means is
scikit-learn's, k-means++ started from ``--seed`` with one initialisation (the authors' ``n_init="auto"``), on one
thread so that the table is the same on every machine. Every query is a row of the table; each run draws its N
agents (``--agents``) from them.

The data sit behind a registration at Yahoo! Webscope, so there is no URL: ``--source`` takes
``set2.train.txt``, a folder holding it or the archive it came in. No checksum is published; the sha256 of the
file read is recorded in the manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from banditbench.data import completion, sanity
from banditbench.data.fetch import RawSpec, raw_files, reading
from banditbench.data.prepared import up_to_date, write_dataset
from banditbench.data.registry import Dataset, Option, register
from banditbench.errors import UserError

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

NAME = "yahoo"
N_FEATURES = 700  # the dimension of set 2's feature vectors (Chapelle & Chang 2010)
RELEVANCE_RANGE = (0.0, 4.0)
N_INIT = 1  # what scikit-learn's n_init="auto", the authors' setting, means for k-means++
COMPAT = ("none", "bandpy")
FORMAT = f"SVMlight/LETOR lines '<relevance 0..4> qid:<id> <feature>:<value> ...' with features 1..{N_FEATURES}"
SPEC = RawSpec(
    NAME,
    (),
    {"train": ("set2.train.txt", "set2.train.txt.gz", "set2.train.txt.bz2")},
    gated="the data are handed out after registration at Yahoo! Webscope (https://webscope.sandbox.yahoo.com, "
    'the "Yahoo! Learning to Rank Challenge" dataset): download it and pass set2.train.txt, its folder or the '
    "archive to --source",
)


def read_documents(path: Path) -> tuple[csr_matrix, np.ndarray, np.ndarray]:
    """(features [documents × 700] as a sparse CSR matrix, relevance, query id) of every line of ``path``."""
    from sklearn.datasets import load_svmlight_file  # heavy: imported when the dataset is built

    with reading(path, FORMAT):
        X, relevance, query = load_svmlight_file(
            str(path), n_features=N_FEATURES, query_id=True, zero_based=False, dtype=np.float64
        )
        if len(query) != len(relevance):  # scikit-learn skips the qid of a line that lacks one
            raise ValueError(f"{len(relevance) - len(query)} lines lack their qid:<id>")
    if len(relevance) == 0:
        raise UserError(f"{path}: no documents in the file ({FORMAT})")
    bad = (relevance < RELEVANCE_RANGE[0]) | (relevance > RELEVANCE_RANGE[1]) | (relevance != np.rint(relevance))
    if bad.any():
        raise UserError(
            f"{path}: relevance {relevance[bad][0]:g} on document {np.flatnonzero(bad)[0] + 1}; set 2 grades "
            "documents 0, 1, 2, 3 or 4"
        )
    X.eliminate_zeros()  # an explicit '<feature>:0' is the same vector as an absent feature
    X.sort_indices()
    return X, relevance, query


def distinct_rows(X: csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """(index of the first document of each distinct vector, in order of appearance; each document's vector)."""
    keys = [
        X.indices[a:b].tobytes() + X.data[a:b].tobytes() for a, b in zip(X.indptr[:-1].tolist(), X.indptr[1:].tolist())
    ]
    codes, _ = pd.factorize(pd.Series(keys, dtype=object))
    first = np.full(codes.max() + 1, len(codes))
    np.minimum.at(first, codes, np.arange(len(codes)))
    return first, codes


def cluster(X: csr_matrix, clusters: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """K-means on the distinct document vectors: (each document's cluster label, the centres [clusters × 700])."""
    from sklearn.cluster import KMeans  # heavy: imported when the dataset is built
    from threadpoolctl import threadpool_limits

    first, codes = distinct_rows(X)
    if clusters > len(first):
        raise UserError(f"--clusters {clusters}: the file holds only {len(first)} distinct document vectors")
    with threadpool_limits(1):
        kmeans = KMeans(n_clusters=clusters, n_init=N_INIT, random_state=seed).fit(X[first])
    return kmeans.labels_[codes], kmeans.cluster_centers_


def build(
    X: csr_matrix,
    relevance: np.ndarray,
    query: np.ndarray,
    *,
    arms: int,
    dim: int,
    clusters: int,
    compat: str,
    rank: int,
    ridge: float,
    iterations: int,
    seed: int,
) -> tuple[dict[str, pd.DataFrame], int]:
    """The reward table [queries × arms], the arms [arms × dim], one row per query, the fit (see the module
    docstring); and the number of documents dropped as a repeated (query, item) pair."""
    labels, centres = cluster(X, clusters, seed)
    documents = pd.DataFrame({"query": query, "item": labels, "relevance": relevance})
    kept = documents.drop_duplicates(["query", "item"], keep="first")
    query_ids, rows = np.unique(kept["query"].to_numpy(), return_inverse=True)
    items = kept["item"].to_numpy()
    completed = completion.complete(
        rows,
        items,
        kept["relevance"].to_numpy(np.float64),
        len(query_ids),
        clusters,
        np.arange(arms),
        value_range=RELEVANCE_RANGE,
        rounded=compat == "bandpy",
        rank=rank,
        ridge=ridge,
        iterations=iterations,
        seed=seed,
    )
    arm_table = completion.arm_frame(centres[:arms, :dim], completed.observed_per_arm)
    arm_table["documents"] = np.bincount(labels, minlength=clusters)[:arms]  # documents of the cluster, all queries
    queries = pd.DataFrame(
        {
            "query": np.arange(len(query_ids)),
            "raw_query": query_ids,
            "documents": np.bincount(np.searchsorted(query_ids, query), minlength=len(query_ids)),
            "items": np.bincount(rows, minlength=len(query_ids)),
        }
    )
    tables = {
        "rewards": completion.reward_frame(completed.table, query_ids),
        "arms": arm_table,
        "queries": queries,
        "fit": pd.DataFrame([completed.fit]),  # the factorisation's fit, beside the tables it filled
    }
    return tables, len(documents) - len(kept)


def prepare(
    data_dir: Path,
    *,
    agents: int = 20,
    arms: int = 30,
    dim: int = 10,
    clusters: int = 100,
    compat: str = "none",
    rank: int = 10,
    ridge: float = 1.0,
    iterations: int = 15,
    seed: int = 0,
    noise: float = 1.0,
    pulling: str = "async",
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
    verify: bool = True,
) -> Path:
    parameters = {
        "agents": agents,
        "arms": arms,
        "dim": dim,
        "clusters": clusters,
        "compat": compat,
        "rank": rank,
        "ridge": ridge,
        "iterations": iterations,
        "seed": seed,
        "noise": noise,
        "pulling": pulling,
    }
    if arms > clusters:
        raise UserError(f"--arms {arms} exceeds --clusters {clusters}: the arms are the first K clusters")
    folder = Path(data_dir) / NAME
    if up_to_date(folder, parameters, force):
        return folder
    with raw_files(SPEC, source, offline, cache, verify) as raw:
        X, relevance, query = read_documents(raw["train"])
    tables, duplicates = build(
        X,
        relevance,
        query,
        arms=arms,
        dim=dim,
        clusters=clusters,
        compat=compat,
        rank=rank,
        ridge=ridge,
        iterations=iterations,
        seed=seed,
    )
    n_queries = len(tables["rewards"])
    if agents > n_queries:
        raise UserError(f"--agents {agents}: the file holds only {n_queries} queries")
    return write_dataset(
        folder,
        NAME,
        tables,
        parameters,
        protocol="matrix",
        raw_files=raw.records,
        counts={"queries": n_queries, "arms": arms},
        force=force,
        rows=sanity.rows_report(len(relevance), {"a repeated (query, item) pair: the first document kept": duplicates}),
        verification=raw.verification,
    )


register(
    Dataset(
        NAME,
        "Yahoo! Learning to Rank Challenge set 2 (registration-gated, --source): queries × the first K of the "
        "K-means document clusters, missing relevances filled by ridge ALS, K-means centres as arm features",
        "Chapelle & Chang 2010; BASS Sec. 7, App. R",
        "matrix",
        prepare,
        (
            Option("agents", int, 20, "N agents drawn (without replacement) from the queries in every run.", minimum=1),
            Option("arms", int, 30, "K arms: the first K clusters (the authors' loader allows K ≤ 30).", minimum=2),
            Option(
                "dim",
                int,
                10,
                "d: arm features are the K-means centres truncated to their first d coordinates.",
                minimum=1,
                maximum=N_FEATURES,
            ),
            Option("clusters", int, 100, "K-means clusters of the document vectors (the authors' 100).", minimum=2),
            Option(
                "compat",
                str,
                "none",
                "none (filled relevances kept real-valued) | bandpy (rounded to integers, as the authors' loader).",
                choices=COMPAT,
            ),
            *completion.FACTORISATION_OPTIONS,
            Option("seed", int, 0, "seed of K-means (k-means++) and of the ALS starting factors.", minimum=0),
            *completion.PROTOCOL_OPTIONS,
        ),
        raw=lambda: SPEC,
        files="set2.train.txt (or .gz, .bz2), a folder holding it, or the archive it came in",
    )
)
