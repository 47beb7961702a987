"""`prepare yahoo-r6`: Yahoo! R6A and R6B day files (Li et al. 2010, 2011) in their line format, each visit's pool of
articles kept as its candidates, and replayed through the logged protocol."""

import numpy as np
import pytest
from fixtures_logs import r6_lines, write_r6

import banditbench as bb
from banditbench.data import load_dataset, yahoo_r6
from banditbench.errors import UserError


def prepare(tmp_path, source, **options):
    return yahoo_r6.prepare_yahoo_r6(tmp_path / "ds", source=str(source), **options)


def test_r6a_visits_become_pooled_events_with_hybrid_contexts(tmp_path):
    write_r6(tmp_path / "raw", "R6A")
    prepare(tmp_path, tmp_path / "raw")
    dataset = load_dataset(tmp_path / "ds", "yahoo-r6")
    counts, events = dataset.manifest["counts"], dataset.table("events")
    assert (
        dataset.manifest["verification"] == "no published checksum" and dataset.parameters["contexts"] == "user x arm"
    )
    assert (
        counts["events"] == 200 and counts["users"] <= 5 and counts["context_dim"] == 36 and counts["release"] == "R6A"
    )
    assert np.allclose(events["propensity"], 0.1) and counts["uniform_log"] and counts["largest_pool"] == 10
    first = r6_lines()[0].split("|")
    items = dataset.table("arms")["item"].tolist()
    assert [items[a] for a in events["candidates"][0]] == [s.split()[0] for s in first[2:]]
    assert items[events["action"][0]] == first[0].split()[1]
    membership = np.array([float(t.split(":")[1]) for t in first[1].split()[1:6]])
    assert events["user"][0] == np.argmax(membership)  # the user cluster of largest membership


def test_r6b_users_are_feature_combinations_and_articles_hashed(tmp_path):
    source = write_r6(tmp_path / "raw", "R6B")
    prepare(tmp_path, source, users=5, arm_buckets=8, events=150)
    dataset = load_dataset(tmp_path / "ds", "yahoo-r6")
    counts = dataset.manifest["counts"]
    assert counts["events"] == 150 and counts["users"] == 6 and counts["context_dim"] == 8  # 5 kept + the rest
    assert counts["user_feature_dim"] == 136 and counts["release"] == "R6B"


def test_a_replay_runs_on_the_visits_pools(tmp_path):
    write_r6(tmp_path / "raw", "R6A", n_visits=300)
    prepare(tmp_path, tmp_path / "raw")
    results = bb.run(["random", "linucb-one"], dataset="yahoo-r6", rounds=300, seeds=1, data_dir=tmp_path / "ds")
    frame = results.frame()
    assert len(frame) == 600 and frame["chosen"].max() < 10 and frame["kept"].sum() > 30
    assert frame["propensity"].eq(0.1).all()


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda line: line.replace(" 0 |user", " 2 |user", 1).replace(" 1 |user", " 2 |user", 1), "click '2' must be"),
        (lambda line: line.split("|", 2)[0] + "|" + line.split("|", 2)[2], "no '|user' features"),
        (
            lambda line: " ".join([line.split()[0], "999999", *line.split()[2:]]),
            "the displayed article 999999 is not in",
        ),
        (lambda line: line.replace("2:", "9:", 1), "is not id:value with id 1–6"),
    ],
)
def test_a_bad_visit_is_refused_by_its_line(tmp_path, edit, problem):
    lines = r6_lines(50)
    lines[6] = edit(lines[6])
    source = write_r6(tmp_path / "raw", lines=lines)
    with pytest.raises(UserError, match=rf"ydata-fp-td-clicks-v1_0.20090501, line 7: .*{problem}"):
        prepare(tmp_path, source)
    assert not (tmp_path / "ds").exists()


def test_without_source_the_registration_is_named(tmp_path):
    with pytest.raises(UserError, match="yahoo-r6 cannot be downloaded automatically: request R6A or R6B"):
        yahoo_r6.prepare_yahoo_r6(tmp_path, source=None)
