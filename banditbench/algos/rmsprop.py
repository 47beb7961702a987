"""RMSProp (Tieleman & Hinton 2012, lecture 6e) in the form TensorFlow 1's ``RMSPropOptimizer`` applies it, on one
flat parameter tensor, without torch.optim.

For every step with gradient g and learning rate α:
    s ← ρ s + (1 − ρ) g²,   θ ← θ − α g / sqrt(s + ε)
with ρ = 0.9, ε = 1e-10 inside the square root, no momentum, and s starting at 1 (TensorFlow 1 fills its mean-square
slot with ones, where torch.optim.RMSprop starts at 0; the first steps are then α g / sqrt(0.1 g² + 0.9) instead of
about 3α sign(g)). The Showdown's networks are trained by it (Riquelme, Tucker & Snoek 2018, §3).
"""

from __future__ import annotations

import torch

RHO, EPSILON = 0.9, 1e-10


def rmsprop_step(theta: torch.Tensor, gradient: torch.Tensor, mean_square: torch.Tensor, lr: float) -> None:
    """One step on θ and its running mean square s (same shape, both updated in place); elementwise, so stacked
    networks [N, p] each take exactly their own step."""
    mean_square.mul_(RHO).addcmul_(gradient, gradient, value=1 - RHO)
    theta.addcdiv_(gradient, mean_square.add(EPSILON).sqrt_(), value=-lr)
