"""The public API (``banditbench.__all__``) documents itself: every parameter named in its docstring, what it returns
and the error a user gets for bad values (``UserError``), as ``help(banditbench.run)`` shows them."""

from __future__ import annotations

import inspect
import re

import pytest

import banditbench


def public_callables() -> dict[str, object]:
    """The functions of ``__all__``, the Results class (its constructor's parameters are documented on the class),
    the Results methods that take parameters and the Environment's constructors."""
    found = {name: getattr(banditbench, name) for name in banditbench.__all__ if callable(getattr(banditbench, name))}
    results = found["Results"]
    for name, member in vars(results).items():
        if inspect.isfunction(member) and not name.startswith("_") and len(inspect.signature(member).parameters) > 1:
            found[f"Results.{name}"] = member
    for name in ("from_dataframe", "from_function"):
        found[f"Environment.{name}"] = getattr(banditbench.Environment, name)
    return found


def undocumented(function) -> list[str]:
    """What the docstring of ``function`` leaves out: a parameter not named in double backticks, what it returns
    (when it returns something), the ``UserError`` it raises."""
    doc = inspect.getdoc(function) or ""
    signature = inspect.signature(function.__init__ if inspect.isclass(function) else function)
    named = set(re.findall(r"``([A-Za-z_]\w*)(?:=[^`]*)?``", doc))  # ``jobs`` or ``jobs=None``
    missing = [f"parameter {name}" for name in signature.parameters if name not in ("self", *named)]
    returns = not inspect.isclass(function) and signature.return_annotation not in (None, "None")
    if returns and "return" not in doc.lower():
        missing.append("what it returns")
    if "UserError" not in doc:
        missing.append("the UserError it raises")
    return missing


@pytest.mark.parametrize("name", sorted(public_callables()))
def test_public_api_docstrings_name_every_parameter_the_return_value_and_the_error(name):
    missing = undocumented(public_callables()[name])
    assert not missing, f"banditbench.{name}'s docstring lacks: {', '.join(missing)}"


def test_an_incomplete_docstring_is_reported():
    def incomplete(source: str, *, force: bool = False) -> int:
        """Read ``source``."""
        return 0

    assert undocumented(incomplete) == ["parameter force", "what it returns", "the UserError it raises"]
