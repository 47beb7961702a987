"""The neural policies on a CUDA device: each resumes from its checkpoint to the same outcome (so a seed repeats
exactly there), a lockstep group chooses as its units run alone up to rounding, and the regret a policy reaches on
the GPU is that of the CPU in distribution (the generators differ, so single runs do not match). Skipped where torch
sees no CUDA device; `run` them on a GPU machine with ``pytest tests/test_cuda.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import stats

from banditbench.algos import ALGORITHMS
from banditbench.runner.unit import Unit, run_group, run_unit

sys.path.insert(0, str(Path(__file__).parent))
from test_checkpoints import ONE_ARM, resumes_identically, unit_of  # noqa: E402
from ties import assert_first_difference_is_rounding, first_difference, lockstep_score_pairs  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")

NEURAL = [name for name in ONE_ARM if ALGORITHMS[name].capabilities.device]


def seeds_of(algorithm: str, device: str, seeds: int, rounds: int) -> list[Unit]:
    params = {**ALGORITHMS[algorithm].defaults(), "device": device}
    return [Unit("synthetic", "linear", algorithm, params, 0, seed, rounds, None) for seed in range(seeds)]


@pytest.mark.parametrize("algorithm", NEURAL)
def test_every_neural_policy_on_cuda_resumes_identically(algorithm, dataset, tmp_path):
    resumes_identically(unit_of(algorithm, "synthetic", "linear", device="cuda"), dataset, tmp_path)


@pytest.mark.parametrize("algorithm", NEURAL)
def test_a_cuda_lockstep_group_chooses_as_its_units_run_alone(algorithm, dataset):
    group = seeds_of(algorithm, "cuda", 3, 100)
    for member, (unit, result) in enumerate(zip(group, run_group(group, dataset))):
        alone = run_unit(unit, dataset).outcome
        parted = first_difference(result.outcome["chosen"].to_numpy(), alone["chosen"].to_numpy())
        if parted is not None:
            assert_first_difference_is_rounding(lockstep_score_pairs(group, member, dataset, parted))
        np.testing.assert_allclose(result.outcome["regret"].to_numpy()[:parted], alone["regret"].to_numpy()[:parted])


@pytest.mark.parametrize("algorithm", NEURAL)
def test_a_policy_reaches_on_cuda_the_regret_it_reaches_on_the_cpu(algorithm, dataset):
    """Eight seeds on each device; a rank test tells the two samples of final regret apart only when nearly every
    run of one device ends above every run of the other (p < 0.001), which a policy that learns otherwise does."""
    final = {
        device: [r.outcome["regret"].to_numpy().sum() for r in run_group(seeds_of(algorithm, device, 8, 200), dataset)]
        for device in ("cpu", "cuda")
    }
    p = stats.mannwhitneyu(final["cpu"], final["cuda"]).pvalue
    assert p >= 1e-3, f"{algorithm}: final regret on the CPU {final['cpu']} and on CUDA {final['cuda']} (p = {p:.1e})"
