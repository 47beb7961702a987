from banditbench.runner.unit import Unit, UnitResult, run_unit

__all__ = ['Unit', 'UnitResult', 'run_unit']
