"""The Yahoo! Learning to Rank Challenge (set 2) loader of BASS's real-data protocol, on a small set2.train.txt."""

import json
import tarfile

import numpy as np
import pandas as pd
import pytest
from conftest import banditbench

from banditbench import presets
from banditbench.data import load_dataset, yahoo
from banditbench.envs.matrix import MatrixEnvironment
from banditbench.errors import UserError

N_QUERIES = 30


def write_set2(folder, n_queries=N_QUERIES, seed=0, name="set2.train.txt"):
    """set2.train.txt's format: '<relevance> qid:<id> <feature>:<value> ...' with 1-based feature ids among 700 in
    increasing order, values in [0, 1] and absent features 0; queries with 5–15 documents each, query ids in
    increasing order from 20001 with gaps. Documents are drawn around 8 prototypes that share 40 sparse
    features, so K-means finds structure; relevance grows with the prototype and a per-query taste. A few
    documents repeat their query's previous one (the same vector twice in a query). Returns the file and the
    (query id, prototype, relevance) of every line."""
    rng = np.random.default_rng(seed)
    # the first 4 coordinates are among them, so that no truncated centre coordinate is 0 for every arm
    support = np.concatenate([[1, 2, 3, 4], np.sort(rng.choice(np.arange(5, 701), 36, replace=False))])
    prototypes = rng.random((8, 40)) * (rng.random((8, 40)) < 0.5)
    lines, rows = [], []
    for q in range(n_queries):
        qid = 20001 + 3 * q
        taste = rng.normal(0, 1)
        previous = None
        for _ in range(rng.integers(5, 16)):
            if previous is not None and rng.random() < 0.1:
                features, proto = previous
            else:
                proto = int(rng.integers(8))
                x = np.clip(prototypes[proto] + rng.normal(0, 0.03, 40), 0, 1) * (prototypes[proto] > 0)
                features = " ".join(f"{f}:{v:.6g}" for f, v in zip(support, x) if v > 0)
            relevance = int(np.clip(np.rint(proto / 2 + taste + rng.normal(0, 0.3)), 0, 4))
            lines.append(f"{relevance} qid:{qid} {features}")
            rows.append((qid, proto, relevance))
            previous = features, proto
    path = folder / name
    path.write_text("\n".join(lines) + "\n")
    return path, pd.DataFrame(rows, columns=["qid", "prototype", "relevance"])


OPTIONS = {"agents": 8, "arms": 6, "dim": 4, "clusters": 10}


def prepare(tmp_path, folder="datasets", **options):
    path, truth = write_set2(tmp_path)
    yahoo.prepare(tmp_path / folder, source=str(path), offline=True, **{**OPTIONS, **options})
    return load_dataset(tmp_path / folder, "yahoo"), truth


def test_prepare_builds_a_query_by_cluster_table_in_the_relevance_scale(tmp_path):
    dataset, truth = prepare(tmp_path)
    rewards = dataset.table("rewards").sort_values("user")
    table = rewards.filter(like="r_").to_numpy()
    assert dataset.manifest["protocol"] == "matrix" and table.shape == (N_QUERIES, 6)
    assert list(rewards["raw_user"]) == sorted(truth["qid"].unique())  # every query a row, in id order
    assert np.all((table >= 0) & (table <= 4))
    arms = dataset.table("arms")
    assert arms.filter(like="x_").shape == (6, 4) and list(arms["arm"]) == list(range(6))
    assert arms.filter(like="x_").to_numpy().max() <= 1  # K-means centres of vectors in [0, 1]
    queries = dataset.table("queries")
    assert list(queries["documents"]) == list(truth.groupby("qid").size())
    assert np.all(queries["items"] <= queries["documents"])
    record = dataset.manifest["raw_files"][0]
    assert record["file"] == "set2.train.txt" and len(record["sha256"]) == 64 and not record["verified"]
    assert dataset.manifest["verification"] == "no published checksum"


def test_observed_relevances_are_kept_and_the_rest_is_filled(tmp_path):
    dataset, truth = prepare(tmp_path)
    table = dataset.table("rewards").sort_values("user").filter(like="r_").to_numpy()
    arms, fit = dataset.table("arms"), dataset.table("fit")
    assert arms["observed"].sum() == fit["observed_entries"].item() > 0
    assert fit["observed_entries"].item() + fit["filled_entries"].item() == table.size
    # a query's observed entries are the relevance of its first document in that cluster: integers 0..4
    integer = table == np.rint(table)
    assert integer.sum() >= arms["observed"].sum()
    assert not integer.all()  # the filled entries are the factorisation's real-valued predictions


def test_documents_of_one_prototype_share_a_cluster_and_repeats_are_dropped(tmp_path):
    path, truth = write_set2(tmp_path)
    X, relevance, query = yahoo.read_documents(path)
    assert X.shape == (len(truth), 700) and np.array_equal(relevance, truth["relevance"])
    labels, centres = yahoo.cluster(X, 8, seed=0)
    assert centres.shape == (8, 700)
    # 8 well separated prototypes and 8 clusters: the clustering is the prototypes, up to names
    assert pd.crosstab(labels, truth["prototype"]).astype(bool).sum(axis=1).eq(1).all()
    tables, dropped = yahoo.build(
        X, relevance, query, arms=6, dim=4, clusters=8, compat="none", rank=3, ridge=1.0, iterations=5, seed=0
    )
    pairs = pd.DataFrame({"q": query, "item": labels})
    assert dropped == pairs.duplicated().sum() > 0
    assert tables["queries"]["items"].sum() == len(truth) - dropped


def test_prepare_is_deterministic_given_the_seed(tmp_path):
    prepare(tmp_path, "a")
    prepare(tmp_path, "b")
    prepare(tmp_path, "c", seed=1)
    read = lambda folder, table: (tmp_path / folder / "yahoo" / f"{table}.parquet").read_bytes()
    for table in ("rewards", "arms", "queries", "fit"):
        assert read("a", table) == read("b", table)
    assert read("a", "rewards") != read("c", "rewards")


def test_bandpy_compat_rounds_the_filled_relevances(tmp_path):
    default, _ = prepare(tmp_path, "a")
    rounded, _ = prepare(tmp_path, "b", compat="bandpy")
    table = lambda d: d.table("rewards").filter(like="r_").to_numpy()
    np.testing.assert_array_equal(table(rounded), np.rint(table(rounded)))
    np.testing.assert_array_equal(table(rounded), np.rint(table(default)))


def test_a_tar_archive_and_a_folder_are_accepted(tmp_path):
    path, _ = write_set2(tmp_path)
    archive = tmp_path / "ltrc_yahoo.tar.bz2"
    with tarfile.open(archive, "w:bz2") as tar:
        tar.add(path, arcname="ltrc_yahoo/set2.train.txt")
    for folder, source in (("a", archive), ("b", tmp_path)):
        yahoo.prepare(tmp_path / folder, source=str(source), offline=True, **OPTIONS)
    same = lambda table: (tmp_path / "a/yahoo" / table).read_bytes() == (tmp_path / "b/yahoo" / table).read_bytes()
    assert same("rewards.parquet") and same("arms.parquet")
    origin = load_dataset(tmp_path / "a", "yahoo").manifest["raw_files"][0]["origin"]
    assert origin.endswith("ltrc_yahoo.tar.bz2!ltrc_yahoo/set2.train.txt")


def test_sanity_report_and_info(tmp_path):
    path, truth = write_set2(tmp_path)
    data = tmp_path / "datasets"
    yahoo.prepare(data, source=str(path), offline=True, **OPTIONS)
    report = load_dataset(data, "yahoo").manifest["sanity"]
    assert report["rows"]["read"] == len(truth) and report["queries"] == report["table_rows"] == N_QUERIES
    assert report["rows"]["kept"] + sum(report["rows"]["dropped"].values()) == len(truth)
    per_query = truth.groupby("qid").size()
    spread = report["documents_per_query"]
    assert (spread["min"], spread["median"], spread["max"]) == (per_query.min(), per_query.median(), per_query.max())
    assert report["observed_share"] + report["filled_share"] == pytest.approx(1)
    shown = banditbench("info", "yahoo", "--data-dir", data)
    assert shown.returncode == 0, shown.stderr
    for needle in ("documents per query", "observed share", "filled share", "dropped: a repeated (query, item)"):
        assert needle in shown.stdout, shown.stdout


@pytest.mark.parametrize(
    "text, message",
    [
        ("2 qid:1 1:0.5\nx qid:1 2:0.5\n", r"set2\.train\.txt: cannot read it as SVMlight/LETOR lines"),
        ("2 qid:1 1:0.5 701:0.5\n", "cannot read it as .* features 1..700 .*701 features"),
        ("2 qid:1 1:0.5\n0 2:0.5\n", "1 lines lack their qid"),
        ("2 qid:1 1:0.5\n5 qid:1 2:0.5\n", "relevance 5 on document 2; set 2 grades documents 0, 1, 2, 3 or 4"),
        ("", "no documents in the file"),
    ],
)
def test_a_malformed_file_is_a_one_line_error(tmp_path, text, message):
    (tmp_path / "set2.train.txt").write_text(text)
    with pytest.raises(UserError, match=message) as error:
        yahoo.prepare(tmp_path / "d", source=str(tmp_path / "set2.train.txt"), offline=True, **OPTIONS)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "d").exists()


def test_missing_source_and_bad_options_are_one_line_errors(tmp_path):
    for offline in (False, True):
        with pytest.raises(UserError, match="yahoo cannot be downloaded automatically: .*Yahoo! Webscope") as error:
            yahoo.prepare(tmp_path / "d", offline=offline)
        assert "set2.train.txt" in str(error.value) and "registration" in str(error.value)
    with pytest.raises(UserError, match="--source .*nowhere does not exist; .*Webscope"):
        yahoo.prepare(tmp_path / "d", source=str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="lacks 1 file yahoo needs: set2.train.txt or"):
        yahoo.prepare(tmp_path / "d", source=str(tmp_path / "empty"))
    path, _ = write_set2(tmp_path)
    with pytest.raises(UserError, match="--arms 12 exceeds --clusters 10"):
        yahoo.prepare(tmp_path / "d", source=str(path), **{**OPTIONS, "arms": 12})
    with pytest.raises(UserError, match="--agents 40: the file holds only 30 queries"):
        yahoo.prepare(tmp_path / "d", source=str(path), **{**OPTIONS, "agents": 40})
    with pytest.raises(UserError, match="--clusters 500: the file holds only"):
        yahoo.prepare(tmp_path / "d", source=str(path), **{**OPTIONS, "clusters": 500})
    assert not (tmp_path / "d").exists()


def test_the_command_line_names_the_missing_source_in_one_line(tmp_path):
    ran = banditbench("prepare", "yahoo", "--offline", "--data-dir", tmp_path / "d")
    assert ran.returncode == 2 and len(ran.stderr.strip().splitlines()) == 1
    assert "Yahoo! Webscope" in ran.stderr and "set2.train.txt" in ran.stderr


def test_rounds_serve_drawn_queries_their_table_rows(tmp_path):
    dataset, _ = prepare(tmp_path)
    table = dataset.table("rewards").sort_values("user").filter(like="r_").to_numpy()
    env = MatrixEnvironment(dataset, np.random.SeedSequence(3))
    assert (env.n_users, env.n_arms, env.dim) == (8, 6, 4)
    for rnd in env.rounds(50):
        np.testing.assert_array_equal(rnd.expected, table[env.agents[rnd.user]])


def test_bass_yahoo_preset_is_ready_and_runs_reduced_on_the_fixture(tmp_path):
    assert presets.missing_for("bass-yahoo") == []
    path, _ = write_set2(tmp_path)
    data = tmp_path / "datasets"
    ok = banditbench(
        "prepare", "yahoo", "--source", path, "--offline", "--clusters", 10, "--arms", 6, "--dim", 4, "--agents", 8,
        "--data-dir", data,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    run = banditbench(
        "run", "--preset", "bass-yahoo", "--rounds", 200, "--seeds", 1, "--tune-seeds", 1, "--jobs", 1,
        "--allow-stand-in", "--data-dir", data, "--out", tmp_path / "out",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    shards = sorted((tmp_path / "out" / "shards").glob("*-seed0.parquet"))
    algos = presets.PRESETS["bass-yahoo"]["algos"]  # each with its best α of the tuning seed
    assert len(shards) == len(algos) and all(any(s.name.startswith(f"{a}-") for s in shards) for a in algos)
    table = load_dataset(data, "yahoo").table("rewards").filter(like="r_").to_numpy()
    for shard in shards:
        rounds = pd.read_parquet(shard)
        assert len(rounds) == 200 and set(rounds["user"]) <= set(range(8))
        assert np.all(np.isin(rounds["best_expected_reward"], table.max(axis=1)))
        np.testing.assert_allclose(rounds["regret"], rounds["best_expected_reward"] - rounds["expected_reward"])
    assert banditbench("report", tmp_path / "out").returncode == 0
    values = pd.read_csv(tmp_path / "out" / "paper_vs_here.csv").query("kind == 'value'")
    assert len(values) == len(algos) and (values["verdict"] == "not comparable").all()
    assert values["reason"].str.startswith("data prepared with clusters = 10: a stand-in for set2.train.txt").all()
    # BASS's CMLB is bandpy's: its exploration is the LinUCB scale ucb_alpha, not Ghosh et al.'s exponent alpha
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["config"]["algorithms"]["cmlb"]["bandpy_schedule"] is True
    scale = pd.read_csv(tmp_path / "out" / "paper_vs_here.csv").query("claim == 'exploration scale'")["here"].iloc[0]
    chosen = manifest["tuning"]["cmlb"]["chosen"]["ucb_alpha"]
    assert f"cmlb: α = {chosen}" in scale
