"""Shared pieces of the neural bandits, one module per concern: settings (devices, generators, schedule, domains),
mlp (the papers' MLP on flat parameters and per-arm gradients), history (per-user samples), training (batched Adam
and the authors' single-sample loops) and learners (Meta-Ban's and M-CNB's user-learners).
"""

from banditbench.algos.neural.history import History, start_blocks
from banditbench.algos.neural.learners import UserLearners, connected_labels, train_learners, train_learners_by_passes
from banditbench.algos.neural.mlp import (
    MLP,
    ArmGradients,
    BlockRows,
    arm_blocks,
    arm_inputs,
    autograd_gradient,
    group_by_block,
    take,
)
from banditbench.algos.neural.settings import (
    DEVICES,
    NETWORK_CODE,
    NETWORK_DOMAINS,
    is_training_round,
    resolve_device,
    torch_generator,
)
from banditbench.algos.neural.training import (
    TrainingJob,
    train_adam,
    train_jobs,
    train_passes_each,
    whole_history_job,
)

__all__ = [
    "DEVICES",
    "MLP",
    "NETWORK_CODE",
    "NETWORK_DOMAINS",
    "ArmGradients",
    "BlockRows",
    "History",
    "TrainingJob",
    "UserLearners",
    "arm_blocks",
    "arm_inputs",
    "autograd_gradient",
    "connected_labels",
    "group_by_block",
    "is_training_round",
    "resolve_device",
    "start_blocks",
    "take",
    "torch_generator",
    "train_adam",
    "train_jobs",
    "train_learners",
    "train_learners_by_passes",
    "train_passes_each",
    "whole_history_job",
]
