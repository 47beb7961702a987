from banditbench.results.units import Unit, UnitResult
from banditbench.runner.unit import run_unit

__all__ = ["Unit", "UnitResult", "run_unit"]
