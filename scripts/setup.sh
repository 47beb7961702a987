#!/usr/bin/env bash
# Set up banditbench in ./.venv (or $BANDITBENCH_VENV): torch first, then the package with its test and docs tools.
#
# torch is resolved before the package so pip never pulls a multi-GB CUDA build by accident:
# - a torch already in the environment is kept (install your own CUDA build there first if you want one);
# - otherwise the CPU wheel torch==2.13.0 is taken from a local wheel folder when pip's
#   configuration has one (find-links), as on the project's CI machines;
# - otherwise the CPU build comes from PyTorch's CPU index ($TORCH_INDEX_URL to change it).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${BANDITBENCH_VENV:-.venv}"
python="${PYTHON:-python3}"

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --quiet --disable-pip-version-check)

if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    if ! "${pip[@]}" install --no-index --no-deps "torch==2.13.0" 2>/dev/null; then
        "${pip[@]}" install torch --index-url "${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}"
    fi
fi
"${pip[@]}" install -e ".[test,docs]"
"$venv/bin/banditbench" --help >/dev/null
