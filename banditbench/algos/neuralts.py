"""Neural Thompson Sampling (Zhang, Zhou, Liang & Gu, ICLR 2021, Algorithm 1): NeuralUCB with the bonus replaced
by a Gaussian draw.

Score (Alg. 1 lines 5–6):  r̃_{t,k} ~ N(f(x_{t,k}; θ), ν² σ²_{t,k}),  σ²_{t,k} = λ g(x_{t,k})ᵀ U⁻¹ g(x_{t,k}) / m
U update (line 9):         U ← U + g gᵀ / m,  U_0 = λI, kept diagonal (the approximation of the paper's experiments,
                           §7) or full with Sherman–Morrison.
Training (Alg. 1's loss): min Σ ½(f(x; θ) − r)² + mλ/2 ‖θ − θ_0‖², on NeuralUCB's schedule and optimiser.

U, the gradients, the training and the ONE/IND split are NeuralUCB's (``NeuralUCB.index`` is the only change);
each member draws its arms' K normals from its own torch generator, in the same order alone as in a group, so a
group chooses as its units alone up to the rounding of batched products.
"""

from __future__ import annotations

import torch

from banditbench.algos.neuralucb import NeuralUCB


class NeuralTS(NeuralUCB):
    """NeuralTS over the members of a group (module docstring); hyper-parameters and domains are NeuralUCB's."""

    def index(self, f: torch.Tensor, widths: torch.Tensor) -> torch.Tensor:
        """One draw of N(f, ν² λ gᵀU⁻¹g/m) per arm [M, K]; ``widths`` is sqrt(gᵀU⁻¹g/m)."""
        z = torch.stack(
            [
                torch.randn(f.shape[1], generator=generator, dtype=torch.float64, device=self.device)
                for generator in self.generators
            ]
        )
        scale = torch.as_tensor(self.nu * self.lam**0.5, device=self.device)[:, None]
        return f + scale * widths * z
