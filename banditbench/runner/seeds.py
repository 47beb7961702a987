"""Seeds (docs/architecture.md, "Seeds"): one master seed per experiment; seed index i of it gives the unit
stream SeedSequence(master, spawn_key=(i,)) — the i-th child of ``SeedSequence(master).spawn`` —
which splits into the environment's stream and the policy's stream. Every algorithm run with
seed index i therefore sees the same users, arms and noise (common random numbers), and adding
seeds or algorithms never changes the units already run.

Tuning seeds (used only to pick the best cell of a hyper-parameter grid) come from a separate
branch of the tree, spawn_key=(TUNING_KEY, j): a key of another length than any report key (i,), so
no tuning stream can ever equal a report stream, however many seeds either side has.
"""

from __future__ import annotations

import numpy as np

TUNING_KEY = 0x74756E65  # "tune": the spawn-key prefix of the tuning seeds


def unit_streams(
    master_seed: int, seed_index: int, tuning: bool = False
) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    key = (TUNING_KEY, seed_index) if tuning else (seed_index,)
    environment, policy = np.random.SeedSequence(master_seed, spawn_key=key).spawn(2)
    return environment, policy
