"""`banditbench info` shows the sanity report of datasets prepared from the genuine raw files."""

import json
import re

import pytest
from conftest import banditbench
from fixtures_raw import SHARED

from banditbench.data import classification, facebook, movielens

pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="genuine raw datasets not available")


def test_info_on_the_four_genuine_datasets(tmp_path):
    data = tmp_path / "ds"
    movielens.prepare(data, variant="100k", source=str(SHARED / "movielens-100k"), offline=True)
    classification.prepare(data, "shuttle", source=str(SHARED / "uci-shuttle"), offline=True)
    classification.prepare(data, "mnist", split="test", source=str(SHARED / "mnist-test"), offline=True)
    facebook.prepare(data, source=str(SHARED / "facebook-snap-ego"), offline=True)
    expected = {  # what each report must say, from the published figures
        "movielens": ["verified", "100,000 read, 100,000 kept", "positives per user", "users per group", "943"],
        "shuttle": ["verified", "58,000 read", "samples per class", r"classes\s+│ 7 "],
        "mnist": ["verified", "10,000 read", "samples per class", r"classes\s+│ 10 "],
        "facebook": ["verified", "176,468 read", "positives per user", "4039"],
    }
    for name, needles in expected.items():
        manifest = json.loads((data / name / "manifest.json").read_text())
        assert manifest["sanity"]["rows"]["read"] >= 10_000 and isinstance(manifest["warnings"], list)
        shown = banditbench("info", name, "--data-dir", data)
        assert shown.returncode == 0, shown.stderr
        for needle in needles:
            assert re.search(needle, shown.stdout), (name, needle, shown.stdout)


def test_info_on_a_dataset_not_prepared_is_one_line(tmp_path):
    shown = banditbench("info", "movielens", "--data-dir", tmp_path)
    assert shown.returncode == 2 and "is not prepared" in shown.stderr and "Traceback" not in shown.stderr
