"""`prepare mind-impressions`: MIND's impressions as a log whose uniform propensities are an assumption, recorded and
warned about, never silent."""

import numpy as np
from fixtures_logged import write_mind_fixture

import banditbench as bb
from banditbench.data import load_dataset, mind_impressions


def test_each_shown_item_is_an_event_of_its_impression_with_an_assumed_propensity(tmp_path):
    raw = write_mind_fixture(tmp_path / "raw", train=30, dev=10)
    mind_impressions.prepare_mind_impressions(tmp_path / "ds", source=str(raw), offline=True, verify=False)
    dataset = load_dataset(tmp_path / "ds", "mind-impressions")
    manifest, events = dataset.manifest, dataset.table("events")
    assert dataset.parameters["propensities"] == "assumed uniform"
    assert any("assumed uniform over its impression" in w for w in manifest["warnings"])
    sizes = events["candidates"].map(len).to_numpy()
    assert np.allclose(events["propensity"], 1 / sizes) and manifest["counts"]["impressions"] == 40
    assert all(a in c for a, c in zip(events["action"], events["candidates"]))
    shares = np.stack(events["user_features"].to_numpy())
    assert np.allclose(shares.sum(axis=1)[shares.sum(axis=1) > 0], 1.0)  # category shares of the clicked history
    results = bb.run(["random"], dataset="mind-impressions", rounds=len(events), seeds=1, data_dir=tmp_path / "ds")
    assert "whose propensities are assumed uniform" in results.report("md")
