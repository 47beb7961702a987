"""The direct Adam: bit-identical to torch.optim.Adam's fused kernel, and Kingma & Ba's Algorithm 1."""

import math
import subprocess
import sys

import torch

from banditbench.algos.adam import Adam


def _problem(steps=300):
    generator = torch.Generator().manual_seed(3)
    theta0 = torch.randn(3, 257, generator=generator)
    # gradients spanning five orders of magnitude, so that ε and the bias corrections both matter
    gradients = [torch.randn(3, 257, generator=generator) * 10.0 ** (step % 5 - 3) for step in range(steps)]
    return theta0, gradients


def _torch_adam(theta0, gradients, **options):
    theta = theta0.clone()
    optimiser = torch.optim.Adam([theta], lr=1e-2, **options)
    for gradient in gradients:
        theta.grad = gradient.clone()
        optimiser.step()
    return theta


def _direct(theta0, gradients):
    theta = theta0.clone()
    optimiser = Adam(theta, lr=1e-2)
    for gradient in gradients:
        optimiser.step(gradient)
    return theta


def test_bit_identical_to_torch_fused_adam_over_many_steps():
    theta0, gradients = _problem()
    assert torch.equal(_direct(theta0, gradients), _torch_adam(theta0, gradients, fused=True))


def test_equal_to_torch_default_adam_and_to_algorithm_1_at_1e_6():
    theta0, gradients = _problem()
    direct = _direct(theta0, gradients)
    torch.testing.assert_close(direct, _torch_adam(theta0, gradients), rtol=0, atol=1e-6)
    # Kingma & Ba 2015, Algorithm 1, in float64
    theta, m, v = theta0.double(), torch.zeros_like(theta0, dtype=torch.float64), 0
    beta1, beta2, lr, eps = 0.9, 0.999, 1e-2, 1e-8
    for t, g in enumerate(gradients, start=1):
        g = g.double()
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        theta = theta - lr * (m / (1 - beta1**t)) / ((v / (1 - beta2**t)).sqrt() + eps)
    # float32 rounding accumulated over 300 steps of parameters of order 1 (each step's error ≈ 1e-7)
    torch.testing.assert_close(direct.double(), theta, rtol=0, atol=1e-5)
    assert math.isfinite(float(direct.abs().max())) and not torch.equal(direct, theta0)


def test_training_never_imports_torch_compiler_stack():
    code = (
        "import sys, torch\n"
        "from banditbench.algos.adam import Adam\n"
        "theta = torch.zeros(4); Adam(theta, lr=0.1).step(torch.ones(4))\n"
        "assert float(theta[0]) < 0\n"
        "print('torch._dynamo' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
