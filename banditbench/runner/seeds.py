"""Seeds (DESIGN.md, "Seeds"): one master seed per experiment; seed index i of it gives the unit
stream SeedSequence(master, spawn_key=(i,)) — the i-th child of ``SeedSequence(master).spawn`` —
which splits into the environment's stream and the policy's stream. Every algorithm run with
seed index i therefore sees the same users, arms and noise (common random numbers), and adding
seeds or algorithms never changes the units already run.
"""

from __future__ import annotations

import numpy as np


def unit_streams(master_seed: int, seed_index: int) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    environment, policy = np.random.SeedSequence(master_seed, spawn_key=(seed_index,)).spawn(2)
    return environment, policy
