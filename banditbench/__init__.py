"""banditbench: a reproducible benchmark for clustering-of-bandits and neural contextual bandits.

The Python API (banditbench/api.py): ``banditbench.prepare``, ``banditbench.run``, ``banditbench.load``,
``banditbench.claims``, ``banditbench.policy`` (a policy outside any simulation) and ``banditbench.Environment``
(a problem from a DataFrame or a reward function), imported on first use so that ``import banditbench`` stays light
for the command line and worker processes.
"""

from banditbench.version import __version__

__all__ = ["Environment", "Results", "__version__", "claims", "load", "policy", "prepare", "run"]


def __getattr__(name: str):
    if name == "Environment":
        from banditbench.environment import Environment

        return Environment
    if name in ("Results", "claims", "load", "policy", "prepare", "run"):
        from banditbench import api

        return getattr(api, name)
    raise AttributeError(f"module 'banditbench' has no attribute {name!r}")
