"""banditbench: a reproducible benchmark for clustering-of-bandits and neural contextual bandits.

The Python API (banditbench/api.py): ``banditbench.prepare``, ``banditbench.run`` and ``banditbench.load``,
imported on first use so that ``import banditbench`` stays light for the command line and worker processes.
"""

__version__ = "0.1.0"

__all__ = ["Results", "load", "prepare", "run"]


def __getattr__(name: str):
    if name in __all__:
        from banditbench import api

        return getattr(api, name)
    raise AttributeError(f"module 'banditbench' has no attribute {name!r}")
