"""examples/quickstart.ipynb, the site's tutorial: it runs from top to bottom on the shared MovieLens-100K folder
(skipped without it), and the copy in the repository keeps the outputs the site shows."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fixtures_raw import SHARED  # noqa: E402

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"
ML100K = SHARED / "movielens-100k"


@pytest.mark.skipif(not (ML100K / "u.data").is_file(), reason=f"{ML100K} is absent")
def test_quickstart_notebook_runs_and_shows_its_results(tmp_path, monkeypatch):
    monkeypatch.setenv("BANDITBENCH_ML100K", str(ML100K))
    monkeypatch.setenv("BANDITBENCH_DATA_DIR", str(tmp_path / "datasets"))
    monkeypatch.setenv("BANDITBENCH_QUICKSTART_ROUNDS", "300")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [cell.get("outputs", []) for cell in notebook.cells if cell.cell_type == "code"]
    text = "\n".join(str(o.get("data", {}).get("text/plain", o.get("text", ""))) for cell in outputs for o in cell)
    assert "Results(" in text and "linucb-ind" in text and "club" in text
    assert any("image/png" in o.get("data", {}) for cell in outputs for o in cell)  # the plotted curves
    assert "eps-greedy[epsilon=0.05]" in text and "eps-greedy[epsilon=0.2]" in text
    assert (tmp_path / "datasets" / "movielens" / "manifest.json").is_file()


def missing_outputs(notebook) -> list[str]:
    """What the tutorial page would lack: a code cell (after the set-up cell) without output, an error shown, a table,
    a plot."""
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    outputs = [output for cell in cells for output in cell.get("outputs", [])]
    problems = [f"cell {n} has no output" for n, cell in enumerate(cells[1:], 2) if not cell.get("outputs")]
    problems += [f"an error: {output.get('ename')}" for output in outputs if output.get("output_type") == "error"]
    if not any("text/html" in output.get("data", {}) for output in outputs):
        problems.append("no table")
    if not any("image/png" in output.get("data", {}) for output in outputs):
        problems.append("no plot")
    return problems


def test_the_stored_notebook_shows_every_cell_s_output_a_table_and_a_plot():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert not missing_outputs(notebook), "rerun: jupyter nbconvert --to notebook --execute --inplace " + str(NOTEBOOK)
    cleared = nbformat.read(NOTEBOOK, as_version=4)
    for cell in cleared.cells:
        if cell.cell_type == "code":
            cell.outputs = [] if "plot()" in cell.source or "summary()" in cell.source else cell.outputs
    assert missing_outputs(cleared)[-1] == "no plot" and "no table" in missing_outputs(cleared)
