"""Rows of raw text tables: every value checked where it is read, every refusal naming its file and line.

Readers parse a whole file at once (pandas, pyarrow) and then check what they got: a line with a field too
many or too few (a cut last line is one), an empty or NaN value, a value that is not a number, not finite,
or outside the format's documented domain (MovieLens-100K ratings are whole stars 1–5) is refused in one
line, ``FILE, line N: …``, N counted from 1 as an editor counts, blank lines included. These checks run
with or without ``--no-verify``, which skips the published checksums and never the parsing.

A row's line is found again only when a row is refused (:func:`find_line` streams the file), so a valid
file costs the vectorised checks alone.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data.fetch import open_bytes, reading
from banditbench.errors import UserError

TOO_MANY = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")


def find_line(path: Path, row: int, header: int = 0, text: bytes | None = None) -> tuple[int, bytes]:
    """The 1-based number and the bytes of the line holding data row ``row`` (0-based) of ``path`` (or of
    ``text``, its bytes rewritten line for line), after ``header`` header lines; blank lines hold no row, as
    pandas and pyarrow skip them."""
    seen, number, line = -1, 0, b""
    with io.BytesIO(text) if text is not None else open_bytes(path) as f:
        for number, line in enumerate(f, 1):
            if number > header and line.strip(b" \r\n"):
                seen += 1
                if seen == row:
                    break
    return number, line


def first(mask: np.ndarray | pd.Series) -> int | None:
    """The index of the first True of a row mask, or None."""
    rows = np.flatnonzero(np.asarray(mask))
    return int(rows[0]) if rows.size else None


def at_row(path: Path, row: int, problem: str, header: int | None = 0) -> UserError:
    """The one-line refusal of data row ``row`` of ``path``, by its line; ``header`` None: a binary table
    (Parquet), by its row counted from 1."""
    where = f"row {row + 1}" if header is None else f"line {find_line(path, row, header)[0]}"
    return UserError(f"{path}, {where}: {problem}")


def read_fields(
    path: Path,
    expected: str,
    names: list[str],
    *,
    header: tuple[str, ...] = (),
    text: bytes | None = None,
    empty: tuple[str, ...] = (),
    **kwargs,
) -> pd.DataFrame:
    """Every line of a delimited file as the columns ``names``, each line checked to hold exactly that many
    fields, none empty but those named in ``empty`` (:func:`complete`). ``header``: the column names the file's
    first line must give; ``text``: the file's bytes rewritten line for line (a separator pandas reads fast);
    ``kwargs`` go to ``pandas.read_csv``, which keeps every value as written (no NA parsing: 'nan' is text)."""
    sep = kwargs.setdefault("sep", ",")
    with reading(path, expected), io.BytesIO(text) if text is not None else open_bytes(path) as f:
        try:
            if header:
                frame = pd.read_csv(f, header=0, keep_default_na=False, **kwargs)
                if tuple(map(str, frame.columns)) != header:
                    raise ValueError(f"header is {','.join(map(str, frame.columns))}, expected {','.join(header)}")
                frame.columns = names
            else:
                frame = pd.read_csv(f, header=None, names=names, keep_default_na=False, **kwargs)
        except pd.errors.EmptyDataError:
            raise UserError(f"{path}: the file is empty (expected {expected})") from None
        except pd.errors.ParserError as e:
            too_many = TOO_MANY.search(str(e))
            if too_many is None:
                raise ValueError(str(e)) from None
            want, line, saw = too_many.groups()
            raise UserError(f"{path}, line {line}: {saw} fields, expected {want}; the format is {expected}") from None
    if frame.empty:
        raise UserError(f"{path}: no rows in the file (expected {expected})")
    complete(frame, path, expected, header=int(bool(header)), sep=sep, text=text, empty=empty)
    return frame


def complete(
    frame: pd.DataFrame,
    path: Path,
    expected: str,
    *,
    header: int = 0,
    sep: str = ",",
    text: bytes | None = None,
    empty: tuple[str, ...] = (),
) -> None:
    """Refuse the first row with a value missing (empty, or NaN after parsing) outside the columns ``empty``
    names: a short line, told by its own fields (a cut last line is one), or an empty field. The last column
    must never be empty, so that a short line always shows."""
    checked = frame.drop(columns=list(empty))
    blank = (checked.isna() | checked.eq("")).to_numpy()
    row = first(blank.any(axis=1))
    if row is None:
        return
    number, line = find_line(path, row, header, text)
    have = len(line.rstrip(b"\r\n").split(sep.encode()))
    if have < frame.shape[1]:
        fields = f"{have} field" + "s" * (have != 1)
        problem = f"{fields}, expected {frame.shape[1]}: a short or cut line; the format is {expected}"
    else:
        problem = f"no {checked.columns[first(blank[row])]} (an empty value)"
    raise UserError(f"{path}, line {number}: {problem}")


def numbers(
    values: pd.Series,
    path: Path,
    name: str,
    *,
    header: int | None = 0,
    low: float | None = None,
    high: float | None = None,
    step: float | None = None,
) -> np.ndarray:
    """``values`` as float64, each a finite number within [low, high] and, with ``step``, a whole multiple of it
    (1: whole numbers; 0.5: half stars); otherwise the first offending row is refused."""
    converted = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
    row = first(np.isnan(converted))
    if row is not None:
        raise at_row(path, row, f"{name} {values.iloc[row]!r} is not a number", header)
    finite = np.isfinite(converted)
    checks = [(~finite, "not a finite number")]
    if low is not None:
        checks.append((finite & (converted < low), f"below {low:g}"))
    if high is not None:
        checks.append((finite & (converted > high), f"above {high:g}"))
    if step:
        off_step = finite & (converted / step != np.rint(converted / step))
        checks.append((off_step, "not a whole number" if step == 1 else f"not a multiple of {step:g}"))
    for mask, what in checks:
        row = first(mask)
        if row is not None:
            raise at_row(path, row, f"{name} {converted[row]:g} is {what}{domain(low, high, step)}", header)
    return converted


def domain(low: float | None, high: float | None, step: float | None) -> str:
    """The documented domain, in words, after a refused value."""
    if low is None and high is None:
        return ""
    kind = {1: "whole numbers ", 0.5: "half steps "}.get(step, "")
    return f" (the format allows {kind}{low:g} to {high:g})" if low is not None and high is not None else ""


def one_of(values: pd.Series, path: Path, name: str, allowed: tuple[str, ...], header: int | None = 0) -> np.ndarray:
    """``values`` as strings, each one of ``allowed``; otherwise the first other is refused."""
    text = values.astype(str).str.strip().to_numpy()
    row = first(~np.isin(text, np.array(allowed)))
    if row is not None:
        shown = ", ".join(allowed) if len(allowed) <= 12 else f"{allowed[0]} … {allowed[-1]}"
        raise at_row(path, row, f"{name} {text[row]!r} is not one of {shown}", header)
    return text
