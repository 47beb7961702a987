"""A griffe extension that turns the reStructuredText of the docstrings into the Markdown the API reference renders:
a doctest session (``>>>`` lines) becomes a code block, where Markdown would read it as nested quotes, and a Sphinx
cross-reference (:class:`~banditbench.errors.UserError`) becomes the name in code."""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:class|func|meth|mod|attr|exc|obj):`(~?)([\w.]+)`")


def markdown(text: str) -> str:
    """A docstring's text with its doctest sessions fenced and its cross-references written as code."""
    text = ROLE.sub(lambda match: f"`{match.group(2).rsplit('.', 1)[-1] if match.group(1) else match.group(2)}`", text)
    lines, session = [], False
    for line in text.splitlines():
        prompt = line.lstrip().startswith((">>> ", "... ")) or line.strip() in (">>>", "...")
        if prompt != session:
            lines.append("```pycon" if prompt else "```")
            session = prompt
        lines.append(line)
    return "\n".join([*lines, "```"] if session else lines)


class ReStructuredText(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
