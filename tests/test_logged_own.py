"""`prepare log`: your own log in CSV or Parquet; without propensities uniform logging is an assumption, recorded and
warned about; a bad propensity is refused by its line."""

import numpy as np
import pandas as pd
import pytest

from banditbench.data import load_dataset, own_log
from banditbench.errors import UserError


def write(tmp_path, n=40, **columns):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "who": rng.integers(4, size=n),
            "item": rng.choice(["shoe", "hat", "bag"], size=n),
            "click": rng.integers(2, size=n),
            "when": np.arange(n)[::-1],
            **columns,
        }
    )
    path = tmp_path / "log.csv"
    frame.to_csv(path, index=False)
    return path, frame


def prepare(tmp_path, path, **options):
    options = {"name": "shop", "user": "who", "action": "item", "reward": "click", **options}
    return own_log.prepare_log(tmp_path / "ds", source=str(path), **options)


def test_a_log_without_propensities_assumes_uniform_logging_and_says_so(tmp_path):
    path, frame = write(tmp_path)
    prepare(tmp_path, path, timestamp="when")
    dataset = load_dataset(tmp_path / "ds", "shop")
    events = dataset.table("events")
    assert dataset.parameters["propensities"] == "assumed uniform" and np.allclose(events["propensity"], 1 / 3)
    assert "assumed uniform over the 3 items" in dataset.manifest["warnings"][0]
    items = dataset.table("arms")["item"].tolist()
    assert [items[a] for a in events["action"]] == frame["item"].tolist()[::-1]  # ordered by --timestamp
    assert dataset.manifest["counts"]["context_dim"] == 3  # one-hot items


def test_recorded_propensities_are_kept_and_a_zero_is_refused_by_its_line(tmp_path):
    path, _ = write(tmp_path, p=np.full(40, 0.5))
    prepare(tmp_path, path, propensity="p")
    dataset = load_dataset(tmp_path / "ds", "shop")
    assert dataset.parameters["propensities"] == "recorded" and not dataset.manifest["warnings"]
    path, _ = write(tmp_path, p=np.r_[np.full(10, 0.5), 0.0, np.full(29, 0.5)])
    with pytest.raises(UserError, match="log.csv, line 12: column 'p' value 0 is not a probability"):
        prepare(tmp_path, path, propensity="p", force=True)
    path, _ = write(tmp_path, p=np.r_[np.full(10, 0.5), np.nan, np.full(29, 0.5)])
    with pytest.raises(UserError, match="log.csv, line 12: column 'p' has no value"):
        prepare(tmp_path, path, propensity="p", force=True)
    assert load_dataset(tmp_path / "ds", "shop").parameters["propensity"] == "p"  # the earlier one untouched
