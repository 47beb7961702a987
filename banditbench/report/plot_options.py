"""How the regret figure is drawn, checked before any result is read (no matplotlib import here)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from banditbench import names

# Per style: matplotlib rc settings and the size of one panel in inches
STYLES = {
    "paper": ({"font.size": 9, "lines.linewidth": 1.3, "lines.markersize": 4}, (4.4, 3.2)),
    "slides": ({"font.size": 14, "lines.linewidth": 2.4, "lines.markersize": 7}, (6.4, 4.8)),
}
BANDS = ("ci", "iqr", "none")
PANELS = ("dataset", "family")  # one panel per dataset, or per dataset and algorithm family


@dataclass(frozen=True)
class PlotOptions:
    """``algorithms``: the ones drawn, in the report's order (None: all); ``band``: "ci" (mean over seeds with
    the 95 % percentile bootstrap band), "iqr" (median with the interquartile range) or "none"; ``log_x``: rounds
    on a log axis; ``style``: "paper" or "slides"; ``panels``: "dataset" (one panel each) or "family" (one panel per
    algorithm family of each dataset: clustering of bandits, linear, neural, baselines)."""

    algorithms: tuple[str, ...] | None = None
    band: str = "ci"
    log_x: bool = False
    style: str = "paper"
    panels: str = "dataset"

    def checked(self, known: list[str]) -> PlotOptions:
        """These options with each name resolved against ``known`` algorithms, or a one-line error."""
        names.pick("band", self.band, BANDS)
        names.pick("style", self.style, STYLES)
        names.pick("panels", self.panels, PANELS)
        if self.algorithms is None:
            return self
        chosen = {names.pick("algorithm in these results", a, known) for a in self.algorithms}
        return replace(self, algorithms=tuple(a for a in known if a in chosen))
