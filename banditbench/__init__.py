"""banditbench: a reproducible benchmark for clustering-of-bandits and neural contextual bandits."""

__version__ = "0.1.0"
