"""EE-Net's side of the parity harness (benchmarks/parity.py dispatches ``--algos eenet`` here).

The instance is the authors' only protocol (Ban et al. 2022, EE-Net §5, MNIST): each round one MNIST image,
block-encoded into K = 10 arms of d = 7 840 (the image in the block of its arm), reward 1 on the true class.
Their loader draws the images through a shuffling ``DataLoader``; the harness records which image each of their
rounds drew and replays that sequence to ours (a prepared dataset of those rows with ``order = "stored"``), so that
both sides see the same images in the same order.

Their code runs unedited from REF (banyikun/EE-Net-ICLR-2022): ``EENet.py``, ``EENetClass.py`` and
``baselines/load_data.py``; the round loop restates ``EENet_run.py`` (linear decision maker, their learning rates,
training after rounds t < 1000 with t % 10 = 0 and then t % 100 = 0). The process gets these shims and nothing else:

- ``torchvision`` (not installed here): ``datasets.MNIST`` serves the IDX files of POOLS (the training images when
  present, else the test images) through ``transforms.ToTensor`` (pixels / 255) and ``transforms.Normalize``;
- ``skimage.measure.block_reduce`` (not installed here): zero-padded block reduction, scikit-image's definition;
- ``DataLoader`` iterators get back the ``.next()`` alias that torch removed in 1.13 (their loader calls it);
- CPU (``CUDA_VISIBLE_DEVICES`` empty), one thread, and ``random``, ``numpy`` and ``torch`` seeded with the run index.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from loop_clock import LoopClock  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
IMAGE = 784  # 28 × 28 pixels


def idx_file(pools: Path, stem: str) -> Path | None:
    return next((pools / f"{stem}{ext}" for ext in ("", ".gz") if (pools / f"{stem}{ext}").is_file()), None)


def mnist_files(pools: Path, train: bool = True) -> tuple[str, Path, Path]:
    """(split, images, labels): the training files when POOLS has them and they are asked for, else the test files."""
    for split, prefix in (("train", "train"), ("test", "t10k")) if train else (("test", "t10k"),):
        images, labels = idx_file(pools, f"{prefix}-images-idx3-ubyte"), idx_file(pools, f"{prefix}-labels-idx1-ubyte")
        if images and labels:
            return split, images, labels
    raise SystemExit(f"{pools} holds no MNIST IDX images with their labels (t10k-images-idx3-ubyte[.gz] …)")


def fake_torchvision(pools: Path) -> types.ModuleType:
    """A ``torchvision`` whose ``datasets.MNIST`` serves the IDX arrays of POOLS, whatever root it is given."""
    import torch

    sys.path.insert(0, str(ROOT))
    from banditbench.data.classification import read_idx

    class ToTensor:
        def __call__(self, image: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(image.astype(np.float32))[None] / 255

    class Normalize:
        def __init__(self, mean, std):
            self.mean, self.std = float(mean[0]), float(std[0])

        def __call__(self, tensor: torch.Tensor) -> torch.Tensor:
            return (tensor - self.mean) / self.std

    class Compose:
        def __init__(self, steps):
            self.steps = steps

        def __call__(self, value):
            for step in self.steps:
                value = step(value)
            return value

    class MNIST(torch.utils.data.Dataset):
        def __init__(self, root, train=True, download=False, transform=None):
            self.split, images, labels = mnist_files(pools, train)
            self.images, self.labels = read_idx(images), read_idx(labels).astype(np.int64)
            self.transform = transform

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, i):
            image = self.images[i]
            return (self.transform(image) if self.transform else image), int(self.labels[i])

    module = types.ModuleType("torchvision")
    module.datasets = types.SimpleNamespace(MNIST=MNIST)
    module.transforms = types.SimpleNamespace(ToTensor=ToTensor, Normalize=Normalize, Compose=Compose)
    return module


def block_reduce(image, block_size, func=np.sum, cval=0, func_kwargs=None):
    """scikit-image's ``measure.block_reduce``: pad each axis at its end with ``cval`` to a multiple of the block,
    then apply ``func`` over every block."""
    image = np.asarray(image)
    pad = [(0, -n % b) for n, b in zip(image.shape, block_size)]
    padded = np.pad(image, pad, constant_values=cval)
    shape = [s for n, b in zip(padded.shape, block_size) for s in (n // b, b)]
    return func(padded.reshape(shape), axis=tuple(range(1, 2 * image.ndim, 2)), **(func_kwargs or {}))


def served_images(pools: Path) -> tuple[str, np.ndarray, np.ndarray]:
    """(split, x [n, 784] float32, y [n]): the images exactly as the shimmed loader serves them to their code."""
    transforms = fake_torchvision(pools).transforms
    dataset = fake_torchvision(pools).datasets.MNIST(".", train=True)
    normalise = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    x = np.stack([normalise(image).numpy().reshape(IMAGE) for image in dataset.images])
    return dataset.split, x, dataset.labels


def install_shims(pools: Path) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = "1"
    import torch.utils.data.dataloader as dataloader

    sys.modules["torchvision"] = fake_torchvision(pools)
    skimage, measure = types.ModuleType("skimage"), types.ModuleType("skimage.measure")
    measure.block_reduce, skimage.measure = block_reduce, measure
    sys.modules.update({"skimage": skimage, "skimage.measure": measure})
    base = dataloader._BaseDataLoaderIter
    if not hasattr(base, "next"):
        base.next = base.__next__


# our setting → their EE_Net constructor argument (EENet_run.py passes lr_1 = 0.01, lr_2 = 0.001, hidden = 100)
KNOBS = {"lr": "lr_1", "explore_lr": "lr_2", "width": "hidden"}


def check_settings(settings: dict) -> None:
    """Refuse, with one line, a setting their EE_Net constructor does not take."""
    missing = [name for name in settings if name not in KNOBS]
    if missing:
        raise SystemExit(
            f"their EE_Net (EENet.py) has no setting for {', '.join(missing)}: it cannot be passed to their code "
            f"(settings it has, in our names: {', '.join(KNOBS)})"
        )


def run_reference(reference: Path, pools: Path, rounds: int, seed: int, ours: dict, settings: dict) -> dict:
    """One run of their EE-Net in this (fresh) process: cumulative regret, timings, the images drawn and the arms
    chosen. ``settings`` (our names) reach their constructor through KNOBS, valued from ``ours``."""
    start = time.perf_counter()
    install_shims(pools)

    import torch

    torch.set_num_threads(1)
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="parity-eenet-") as scratch:  # what their code writes goes, then is removed
        os.chdir(scratch)
        try:
            return their_loop(reference, pools, rounds, seed, start, ours, settings)
        finally:
            os.chdir(here)


def their_loop(reference: Path, pools: Path, rounds: int, seed: int, start: float, ours: dict, settings: dict) -> dict:
    """Their EE-Net's loop on the MNIST they load through the shims."""
    import random

    import torch

    sys.path.insert(0, str(reference))
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    split, x, y = served_images(pools)
    index = {(row.tobytes(), int(label)): i for i, (row, label) in reversed(list(enumerate(zip(x, y))))}
    b = __import__("baselines.load_data", fromlist=["load_mnist_1d"]).load_mnist_1d()
    arguments = {"pool_step_size": 50, "lr_1": 0.01, "lr_2": 0.001, "lr_3": 0.001, "hidden": 100}
    arguments.update({KNOBS[name]: ours[name] for name in settings})
    model = __import__("EENet").EE_Net(b.dim, b.n_arm, **arguments, neural_decision_maker=False)
    regret, order, chosen = np.zeros(rounds), np.zeros(rounds, np.int64), np.zeros(rounds, np.int64)
    total = 0.0
    clock = LoopClock(start)
    for t in range(rounds):
        if t == rounds // 2:
            clock.half()
        context, rewards = b.step()
        order[t] = index[(context[0, :IMAGE].astype(np.float32).tobytes(), int(np.argmax(rewards)))]
        arm = chosen[t] = model.predict(context, t)
        reward = rewards[arm]
        total += np.max(rewards) - reward
        regret[t] = total
        model.update(context, reward, t)
        if (t < 1000 and t % 10 == 0) or (t >= 1000 and t % 100 == 0):  # their schedule
            model.train(t)
    return {
        "regret": regret.tolist(),
        "order": order.tolist(),
        "chosen": chosen.tolist(),
        "split": split,
        **clock.seconds(),
    }


def replay_dataset(pools: Path, order: list[int], folder: Path) -> str:
    """A prepared classification dataset of the images in ``order`` (as their loader served them) and then the
    others, streamed in that order by our environment (``order = "stored"``), block encoding."""
    sys.path.insert(0, str(ROOT))
    from banditbench.data.classification import samples_table
    from banditbench.data.prepared import write_dataset

    split, x, y = served_images(pools)
    rows = np.asarray(order, np.int64)
    rows = np.concatenate([rows, np.setdiff1d(np.arange(len(y)), rows)])  # the rest after: every class is an arm
    parameters = {"split": split, "normalise": "meanstd", "encoding": "block", "order": "stored"}
    write_dataset(
        folder / "mnist-replay",
        "mnist-replay",
        {"samples": samples_table(x[rows], y[rows])},
        parameters,
        protocol="classification",
        force=True,
    )
    return "mnist-replay"
