"""EE-Net's "f2 overturns f1" diagnostic (Ban et al. 2022, EE-Net §3: the decision maker combines f1 and f2)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from banditbench.algos import ALGORITHMS
from banditbench.envs import PROTOCOLS, Budget
from banditbench.runner import Unit, run_unit

ROOT = Path(__file__).resolve().parents[1]


def test_overturn_share_is_recorded_by_the_runner(dataset):
    unit = Unit("synthetic", "linear", "eenet", ALGORITHMS["eenet"].defaults(), 0, 0, 250, None)
    share = run_unit(unit, dataset).outcome.column("diag_overturn_share").to_numpy(zero_copy_only=False)
    sampled = share[~np.isnan(share)]
    assert len(sampled) >= 3 and ((sampled >= 0) & (sampled <= 1)).all()
    assert sampled.max() > 0  # f2 at its random initialisation does change some choices


def test_a_silent_f2_never_overturns(dataset):
    env = PROTOCOLS["linear"].environment(dataset, np.random.SeedSequence(0))
    policy = ALGORITHMS["eenet"].build(
        n_users=env.n_users, n_arms=env.n_arms, dim=env.dim, seed=np.random.SeedSequence(0), params={}
    )
    policy.theta2 = torch.zeros_like(policy.theta2)  # f2 ≡ 0 with no biases: the decision is f1's argmax
    for rnd in env.rounds(40):
        view = rnd.view(Budget())
        policy.select([view], [Budget()])
    assert policy.diagnostics(0) == {"overturn_share": 0.0}
    assert np.isnan(policy.diagnostics(0)["overturn_share"])  # the window restarts after each sample


# ------------------------------------------------------------------------ the parity harness's EE-Net path
# A stand-in for the authors' repository with their interface only (``baselines/load_data.load_mnist_1d`` drawing
# through a shuffling DataLoader and calling ``.next()``; ``EENet.EE_Net`` with predict/update/train using
# ``skimage.measure.block_reduce``), so that the harness's shims and bookkeeping are checked without their code.
FAKE_LOADER = """
import numpy as np, torch
from torchvision import datasets, transforms
class load_mnist_1d:
    def __init__(self):
        t = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
        loader = torch.utils.data.DataLoader(datasets.MNIST('./data', train=True, transform=t), shuffle=True)
        self.dataiter, self.n_arm, self.dim = iter(loader), 10, 7840
    def step(self):
        x, y = self.dataiter.next()
        X = np.zeros((10, 7840))
        for a in range(10):
            X[a, 784 * a : 784 * (a + 1)] = x.numpy().reshape(784)
        rwd = np.zeros(10)
        rwd[y.item()] = 1
        return X, rwd
"""
FAKE_EENET = """
import numpy as np
from skimage.measure import block_reduce
class EE_Net:
    def __init__(self, dim, n_arm, pool_step_size, lr_1, lr_2, lr_3, hidden, neural_decision_maker):
        self.trained = []
    def predict(self, context, t):
        return int(block_reduce(context[:1], block_size=(1, 50), func=np.mean).shape[1] == 157) * 3  # arm 3
    def update(self, context, reward, t):
        pass
    def train(self, t):
        self.trained.append(t)
        return 0.0, 0.0, 0.0
"""
IMAGES = 40


@pytest.fixture(scope="module")
def fake_reference(tmp_path_factory) -> tuple[Path, Path]:
    """(their repository's stand-in, a folder of MNIST-format test files: 40 random images, labels 0–9 in turn)."""
    import gzip
    import struct

    root = tmp_path_factory.mktemp("eenet")
    (root / "ref" / "baselines").mkdir(parents=True)
    (root / "ref" / "baselines" / "load_data.py").write_text(FAKE_LOADER)
    (root / "ref" / "EENet.py").write_text(FAKE_EENET)
    mnist = root / "mnist"
    mnist.mkdir()
    pixels = np.random.default_rng(0).integers(0, 256, (IMAGES, 28, 28), dtype=np.uint8)
    labels = np.arange(IMAGES, dtype=np.uint8) % 10
    (mnist / "t10k-images-idx3-ubyte.gz").write_bytes(
        gzip.compress(struct.pack(">4I", 2051, IMAGES, 28, 28) + pixels.tobytes())
    )
    (mnist / "t10k-labels-idx1-ubyte.gz").write_bytes(
        gzip.compress(struct.pack(">2I", 2049, IMAGES) + labels.tobytes())
    )
    return root / "ref", mnist


def parity_worker(side: str, reference: Path, mnist: Path, rounds: int, folder: Path, **job) -> dict:
    """One worker of the harness, in a fresh process as the harness runs it, on a job file; the scratch folders it
    made in the temporary folder are gone after it."""
    job = {"algorithm": "eenet", "reference": str(reference), "pools": str(mnist), "rounds": rounds, "seed": 0, **job}
    job.setdefault("ours", {})
    job.setdefault("settings", {})
    (folder / "job.json").write_text(json.dumps(job))
    scratch = folder / f"tmp-{side}"
    scratch.mkdir()
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "parity.py"), "--worker", side, "--job", str(folder / "job.json")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(scratch)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(scratch.iterdir()) == []
    return json.loads((folder / "answer.json").read_text())


def test_their_run_records_the_images_it_drew_and_its_regret(fake_reference, tmp_path):
    reference, mnist = fake_reference
    theirs = parity_worker("theirs", reference, mnist, 25, tmp_path)
    order = np.array(theirs["order"])
    assert theirs["split"] == "test" and len(set(order)) == 25  # a shuffle without repeats, within one pass
    assert not np.array_equal(order, np.arange(25))
    # the stand-in always plays arm 3 (the shimmed block_reduce gave 157 zero-padded blocks of 50): regret 1
    # on every round whose image is not a 3
    assert theirs["regret"][-1] == np.sum(order % 10 != 3)


def test_ours_replays_their_images_in_their_order(fake_reference, tmp_path):
    from banditbench.data import load_dataset
    from banditbench.envs.classification import ClassificationEnvironment

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import parity_eenet

    _, mnist = fake_reference
    order = [7, 3, 22, 15, 0, 39]
    name = parity_eenet.replay_dataset(mnist, order, tmp_path)
    env = ClassificationEnvironment(load_dataset(tmp_path, name), np.random.SeedSequence(5))
    rounds = list(env.rounds(6))
    assert [r.user for r in rounds] == [i % 10 for i in order]  # the class of each replayed image, in order
    _, x, _ = parity_eenet.served_images(mnist)
    np.testing.assert_array_equal(rounds[2].arms[4, 4 * 784 : 5 * 784], x[22])  # block 4 of arm 4 is image 22
    assert env.n_arms == 10 and env.dim == 7840


def test_ours_runs_on_the_replayed_instance(fake_reference, tmp_path):
    reference, mnist = fake_reference
    params = {"pool": 50, "train_steps": 2, "width": 8, "explore_width": 8}
    order = list(range(39, 19, -1))
    ours = parity_worker("ours", reference, mnist, 20, tmp_path, order=order, learners={"code": ["eenet", params]})
    regret = np.array(ours["learners"]["code"]["regret"])
    assert len(regret) == 20 and np.all(np.diff(regret) >= 0) and regret[-1] <= 20
    assert ours["learners"]["code"]["chosen"][:1] != []  # the arms it chose, for the agreement with theirs


def test_block_reduce_shim_pads_with_zeros_like_scikit_image():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import parity_eenet

    reduced = parity_eenet.block_reduce(np.arange(7.0)[None], block_size=(1, 3), func=np.mean)
    np.testing.assert_allclose(reduced, [[1.0, 4.0, 2.0]])  # the last block is (6, 0, 0)


def sgd_steps(mlp, theta, x, r, order, lr):
    for i in order:
        _, gradient = mlp.gradient(theta, x[i][None, None], lambda f: 2 * (f - r[i]))
        theta = theta - lr * gradient
    return theta


@pytest.mark.parametrize("max_steps, tolerance, steps", [(2000, 10.0, 3), (5, 0.0, 5)])
def test_code_training_passes_stop_at_the_tolerance_or_the_step_cap(max_steps, tolerance, steps):
    from banditbench.algos.neural import MLP, train_passes_each

    mlp = MLP(4, 6, 2, bias=True, init="torch")
    generator = torch.Generator().manual_seed(3)
    theta = mlp.init(generator, torch.device("cpu"))[None]
    x, r = torch.randn(3, 4, generator=generator), torch.tensor([1.0, 0.0, 1.0])
    order = torch.randperm(3, generator=torch.Generator().manual_seed(9)).tolist()
    trained = train_passes_each(
        mlp,
        theta,
        [(x, r)],
        [torch.Generator().manual_seed(9)],
        lr=0.1,
        optimiser="sgd",
        max_steps=max_steps,
        tolerance=tolerance,
    )
    # one pass when its loss is already within a loose tolerance; else passes in the same order up to the cap
    expected = sgd_steps(mlp, theta, x, r, (order * 2)[:steps], 0.1)
    torch.testing.assert_close(trained, expected)


def test_conv_explorer_is_a_conv1d_then_the_mlp():
    from banditbench.algos.eenet import ConvMLP

    net = ConvMLP(15685, 100, bias=True, init="torch")
    assert net.outputs == 312 and net.p == 101 + 312 * 100 + 100 + 100 + 1  # the code's f2 on MNIST's pooled φ
    small = ConvMLP(460, 5, bias=True, init="torch")
    theta = small.init(torch.Generator().manual_seed(0), torch.device("cpu"))
    x = torch.randn(3, 460)
    conv = torch.nn.functional.conv1d(x[:, None], theta[:100].view(1, 1, 100), theta[100:101], stride=50)[:, 0]
    W1, b1 = theta[101 : 101 + 8 * 5].view(5, 8), theta[141:146]
    W2, b2 = theta[146:151].view(1, 5), theta[151:]
    expected = (torch.relu(conv @ W1.T + b1) @ W2.T + b2)[:, 0]
    torch.testing.assert_close(small.forward(theta, x), expected)
    f, gradient = small.gradient(theta[None], x[None], lambda f: torch.ones_like(f))
    leaf = theta.clone().requires_grad_(True)
    (expected_gradient,) = torch.autograd.grad(small.forward(leaf, x).sum(), leaf)
    torch.testing.assert_close(gradient[0], expected_gradient)
