"""Classification datasets for online classification with bandit feedback (M-CNB §5.3, Meta-Ban §4.3).

Each family reads its raw files into features X [n, d] and labels y ∈ {0..K−1}; prepare writes one
``samples`` table (x_0..x_{d−1} float32, label) after the normalisation the papers use:

- ``meanstd``: pixels/255 then (x − 0.1307)/0.3081, torchvision's MNIST ``Normalize`` (Meta-Ban's MNIST);
- ``l2``: each row scaled to unit L2 norm, ``sklearn.preprocessing.normalize`` as in the NeuralUCB
  ``Bandit_multi`` loader the M-CNB runner imports (also notMNIST in Meta-Ban);
- ``none``: pixels/255 for images, the raw values otherwise.

URLs and checksums come from other libraries' sources (torchvision md5 / TFDS sha256 for the MNIST family,
scikit-learn's sha256 for covertype, Keras's sha256 beside the md5 the CIFAR-10 page publishes). UCI publishes
no checksums: the sha256 of what was read is recorded in the manifest.

CIFAR-10 (Krizhevsky 2009, "Learning Multiple Layers of Features from Tiny Images", ch. 3): its Python
release is pickles, read by a restricted unpickler that can rebuild numpy arrays and nothing else.
"""

from __future__ import annotations

import importlib
import io
import pickle
import string
import struct
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import rows
from banditbench.data.fetch import Download, RawFiles, RawSpec, open_bytes, raw_files, reading
from banditbench.data.prepared import up_to_date, write_dataset
from banditbench.data.registry import Dataset, Option, register
from banditbench.data.sanity import rows_report
from banditbench.errors import UserError

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081
NORMALISATIONS = ("meanstd", "l2", "none")
ENCODINGS = ("block", "shift")
SPLITS = ("all", "train", "test")
IDX_NAMES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}


# ---------------------------------------------------------------- readers


def read_idx(path: Path) -> np.ndarray:
    """LeCun IDX: big-endian magic (2051 images, 2049 labels), the dimensions, then uint8 data."""
    packed = "a gzip'ed IDX file" if path.suffix == ".gz" else "an IDX file"
    with reading(path, f"{packed} (MNIST format)"), open_bytes(path) as f:
        data = f.read()
        magic = struct.unpack(">I", data[:4])[0]
        if magic not in (2049, 2051):
            raise ValueError(f"magic number {magic}, expected 2049 or 2051")
        ndim = 1 if magic == 2049 else 3
        shape = struct.unpack(f">{ndim}I", data[4 : 4 + 4 * ndim])
        body = np.frombuffer(data, np.uint8, offset=4 + 4 * ndim)
        if body.size != int(np.prod(shape)):
            raise ValueError(f"{body.size} data bytes for shape {shape}: the file is truncated")
        return body.reshape(shape)


def idx_pair(raw: RawFiles, split: str, transpose: bool = False) -> tuple[np.ndarray, np.ndarray]:
    parts = ("train", "test") if split == "all" else (split,)
    images, labels = [], []
    for part in parts:
        x, y = read_idx(raw[f"{part}_images"]), read_idx(raw[f"{part}_labels"])
        if x.ndim != 3 or y.ndim != 1:
            wrong = raw[f"{part}_images"] if x.ndim != 3 else raw[f"{part}_labels"]
            raise UserError(
                f"{wrong}: holds {'labels' if x.ndim != 3 else 'images'}, expected "
                f"{'images (IDX magic 2051)' if x.ndim != 3 else 'labels (IDX magic 2049)'}"
            )
        if len(x) != len(y):
            raise UserError(f"{raw[f'{part}_images']}: {len(x)} images but {len(y)} labels")
        images.append(x.transpose(0, 2, 1) if transpose else x)  # EMNIST stores images transposed
        labels.append(y)
    x = np.concatenate(images)
    return x.reshape(len(x), -1).astype(np.float32) / 255.0, np.concatenate(labels).astype(np.int64)


def idx_members(prefix: str, split: str) -> dict[str, tuple[str, ...]]:
    parts = ("train", "test") if split == "all" else (split,)
    return {k: (f"{prefix}{v}.gz", f"{prefix}{v}") for k, v in IDX_NAMES.items() if k.split("_")[0] in parts}


def read_mnist(raw: RawFiles, split: str):
    return idx_pair(raw, split)


def read_emnist(raw: RawFiles, split: str):
    x, y = idx_pair(raw, split, transpose=True)
    return x, y - 1  # letters are labelled 1..26


def read_notmnist(raw: RawFiles, split: str):
    """notMNIST_small/{A..J}/*.png, 28×28 grayscale (a few files are corrupt and skipped, as everyone does); or
    the IDX files of the MNIST-format mirrors (MNIST's four file names, letters A..J labelled 0..9)."""
    if raw.get("images") is None:
        return read_notmnist_idx(raw, split)
    for key in IDX_NAMES:  # the PNGs are read: IDX files lying beside them are not
        raw.unused(key)
    from PIL import Image

    path = raw["images"]
    images, labels, skipped = [], [], []

    def add(name: str, blob: bytes) -> None:
        letter = Path(name).parent.name
        if len(letter) != 1 or not "A" <= letter <= "J" or not name.endswith(".png"):
            return
        try:
            image = np.asarray(Image.open(io.BytesIO(blob)).convert("L"), dtype=np.uint8)
        except Exception:  # noqa: BLE001  corrupt PNGs are part of the published archive
            skipped.append(name)
            return
        if image.shape == (28, 28):
            images.append(image.reshape(-1))
            labels.append(ord(letter) - ord("A"))
        else:
            skipped.append(name)

    with reading(path, "the notMNIST tar.gz of A..J/*.png"):
        if path.is_dir():
            for png in sorted(path.rglob("*.png")):
                add(str(png), png.read_bytes())
        else:
            with tarfile.open(path) as archive:
                for member in sorted(archive.getmembers(), key=lambda m: m.name):
                    if member.isfile():
                        add(member.name, archive.extractfile(member).read())
    if not images:
        raise UserError(f"{path}: no 28×28 PNG images in folders A..J")
    raw.dropped["PNG unreadable or not 28×28"] = len(skipped)
    return np.stack(images).astype(np.float32) / 255.0, np.array(labels, np.int64)


def read_notmnist_idx(raw: RawFiles, split: str):
    """The IDX pairs of a notMNIST mirror found whole; a part with a file missing is named in a warning, and
    only the files read are recorded."""
    parts = [part for part in ("train", "test") if raw.get(f"{part}_images") and raw.get(f"{part}_labels")]
    if not parts:
        raise UserError(
            "notmnist needs notMNIST_small.tar.gz (or its folder A..J/*.png) or the IDX files "
            "train-images-idx3-ubyte(.gz) + train-labels-idx1-ubyte(.gz) and/or the t10k pair"
        )
    for part in sorted({"train", "test"} - set(parts), reverse=True):
        keys = (f"{part}_images", f"{part}_labels")
        missing = " and ".join(f"{IDX_NAMES[key]}(.gz)" for key in keys if raw.get(key) is None)
        raw.warnings.append(f"--split {split} reads the {' and '.join(parts)} images only: {missing} not found")
        for key in keys:
            raw.unused(key)
    pairs = [idx_pair(raw, part) for part in parts]
    return np.concatenate([x for x, _ in pairs]), np.concatenate([y for _, y in pairs])


CIFAR_PIXELS = 3 * 32 * 32  # channel-major: 1024 red, 1024 green, then 1024 blue values, rows top to bottom
CIFAR_CLASSES = 10
CIFAR_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR_TEST = "test_batch"


def _numpy_global(module: str, name: str):
    return getattr(importlib.import_module(module), name)


def _numpy_core(module: str, name: str):
    """A helper numpy's array pickles name, wherever this numpy keeps it (numpy._core since 2.0)."""
    try:
        return _numpy_global(f"numpy._core.{module}", name)
    except ImportError:
        return _numpy_global(f"numpy.core.{module}", name)


class BatchUnpickler(pickle.Unpickler):
    """Unpickles a CIFAR-10 Python batch, a dict of bytes keys, a uint8 array and lists: the only globals it
    resolves are the ones that rebuild a numpy array (``_frombuffer`` for protocol-5 re-pickles) and
    ``_codecs.encode``, which Python 3 writes for bytes in protocol-2 pickles. Any other global (``os.system``,
    ``builtins.eval``…) is refused before it is called, so a tampered file cannot run code."""

    ALLOWED = {
        **{
            (f"numpy.{core}.{module}", name): lambda module=module, name=name: _numpy_core(module, name)
            for core in ("core", "_core")
            for module, name in (("multiarray", "_reconstruct"), ("numeric", "_frombuffer"))
        },
        ("numpy", "ndarray"): lambda: np.ndarray,
        ("numpy", "dtype"): lambda: np.dtype,
        ("_codecs", "encode"): lambda: _numpy_global("_codecs", "encode"),
    }

    def __init__(self, file, path: Path):
        super().__init__(file, encoding="bytes")
        self.path = path

    def find_class(self, module: str, name: str):
        allowed = self.ALLOWED.get((module, name))
        if allowed is None:
            raise UserError(
                f"{self.path}: refused, the pickle calls {module}.{name}, which a CIFAR-10 batch never does "
                "(only numpy arrays are allowed); the file is not the published one"
            )
        return allowed()


def read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One batch as (pixels uint8 [n, 3072], labels [n]): a Python-release pickle, or a binary-release
    ``.bin`` of n records of 1 label byte + 3072 pixel bytes."""
    if path.suffix == ".bin":
        with reading(path, "a CIFAR-10 binary batch (records of 1 label byte + 3072 pixel bytes)"):
            body = np.frombuffer(path.read_bytes(), np.uint8)
            if body.size == 0 or body.size % (CIFAR_PIXELS + 1):
                raise ValueError(f"{body.size} bytes, not a whole number of 3073-byte records: the file is truncated")
        records = body.reshape(-1, CIFAR_PIXELS + 1)
        pixels, labels = records[:, 1:], records[:, 0].astype(np.int64)
    else:
        with reading(path, "a CIFAR-10 Python batch (a pickled dict with b'data' and b'labels')"):
            with open(path, "rb") as f:
                try:
                    batch = BatchUnpickler(f, path).load()
                except pickle.UnpicklingError as e:
                    raise ValueError(str(e) or "not a pickle") from None
            if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
                raise ValueError("no dict with b'data' and b'labels'")
            pixels, labels = batch[b"data"], np.asarray(batch[b"labels"])
            if not isinstance(pixels, np.ndarray) or pixels.dtype != np.uint8 or pixels.ndim != 2:
                raise ValueError("b'data' is not a 2-D uint8 array")
            if pixels.shape[1] != CIFAR_PIXELS:
                raise ValueError(f"rows of {pixels.shape[1]} values, expected {CIFAR_PIXELS}")
            if labels.ndim != 1 or len(labels) != len(pixels) or not np.issubdtype(labels.dtype, np.integer):
                raise ValueError(f"{len(pixels)} images but b'labels' is not a list of {len(pixels)} integers")
            labels = labels.astype(np.int64)
    outside = labels[(labels < 0) | (labels >= CIFAR_CLASSES)]
    if outside.size:
        raise UserError(f"{path}: label {int(outside[0])} outside 0..9")
    return pixels, labels


def read_cifar10(raw: RawFiles, split: str):
    """The five training batches then the test batch, in file order; features = pixels/255 (channel-major)."""
    keys = [k for k in (*CIFAR_TRAIN, CIFAR_TEST) if raw.get(k) is not None]
    batches = [read_cifar_batch(raw[k]) for k in keys]
    pixels = np.concatenate([p for p, _ in batches])
    return pixels.astype(np.float32) / np.float32(255.0), np.concatenate([y for _, y in batches])


def cifar10_spec(split: str) -> RawSpec:
    """The Python release by default; ``--source`` also takes its folder cifar-10-batches-py/, or the binary
    release (cifar-10-binary.tar.gz or cifar-10-batches-bin/, whose checksum is not pinned here)."""
    python = Download(
        "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        "cifar-10-python.tar.gz",
        "md5:c58f30108f718f92721af3b95e74349a",
        sha256="6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
    )
    keys = {"all": (*CIFAR_TRAIN, CIFAR_TEST), "train": CIFAR_TRAIN, "test": (CIFAR_TEST,)}[split]
    return RawSpec("cifar10", (python,), {k: (k, f"{k}.bin") for k in keys})


@dataclass(frozen=True)
class UciLayout:
    """A line of a UCI table as its ``.names`` file documents it: ``fields`` values separated by ``sep``, the
    class in field ``label`` (0: first, −1: last) taking one of ``classes``, the other fields numbers within
    [low, high] (whole numbers when ``step`` is 1, reals when it is None) or, when ``categorical``, one-letter
    categories with '?' for a missing value."""

    describe: str
    fields: int
    label: int
    classes: tuple[str, ...]
    low: float | None = None
    high: float | None = None
    step: float | None = 1
    categorical: bool = False
    sep: str = ","
    skipinitialspace: bool = False


CATEGORIES = (*string.ascii_lowercase, "?")


def read_uci(path: Path, layout: UciLayout) -> tuple[pd.DataFrame, np.ndarray]:
    """(the features, one column per field, the class of every line as text), each value checked against the
    layout; a short, cut or junk line is refused naming its line."""
    label = layout.label % layout.fields
    names = ["class" if j == label else f"field {j + 1}" for j in range(layout.fields)]
    frame = rows.read_fields(
        path,
        layout.describe,
        names,
        sep=layout.sep,
        skipinitialspace=layout.skipinitialspace,
        dtype=str if layout.categorical else {"class": str},
    )
    classes = rows.one_of(frame["class"], path, "class", layout.classes)
    features = frame.drop(columns="class")
    for name in features.columns:
        if layout.categorical:
            rows.one_of(features[name], path, name, CATEGORIES)
        else:
            features[name] = rows.numbers(
                features[name], path, name, low=layout.low, high=layout.high, step=layout.step
            )
    return features, classes


def encode_labels(values: np.ndarray) -> np.ndarray:
    return np.unique(values, return_inverse=True)[1].astype(np.int64)  # sorted classes → 0..K−1


SHUTTLE = UciLayout("space-separated shuttle rows: 9 whole numbers, class 1–7", 10, -1, tuple("1234567"), sep=" ")
LETTER = UciLayout(
    "comma-separated letter rows: class A–Z, 16 whole numbers 0–15",
    17,
    0,
    tuple(string.ascii_uppercase),
    low=0,
    high=15,
)
PENDIGITS = UciLayout(
    "comma-separated pendigits rows: 16 whole numbers 0–100, class 0–9",
    17,
    -1,
    tuple(string.digits),
    low=0,
    high=100,
    skipinitialspace=True,
)
MUSHROOM = UciLayout(
    "comma-separated mushroom rows: class e or p, 22 one-letter attributes", 23, 0, ("e", "p"), categorical=True
)
MAGIC = UciLayout("comma-separated MAGIC rows: 10 reals, class g or h", 11, -1, ("g", "h"), step=None)
COVERTYPE = UciLayout("comma-separated covertype rows: 54 whole numbers, class 1–7", 55, -1, tuple("1234567"))


def parts_of(split: str) -> tuple[str, ...]:
    return ("train", "test") if split == "all" else (split,)


def read_shuttle(raw: RawFiles, split: str):
    """9 ints + class 1–7, single-space separated; the training file is served .Z compressed."""
    read = [read_uci(raw[part], SHUTTLE) for part in parts_of(split)]
    x = np.concatenate([features.to_numpy(np.float32) for features, _ in read])
    return x, np.concatenate([classes for _, classes in read]).astype(np.int64) - 1


def read_letter(raw: RawFiles, split: str):
    features, classes = read_uci(raw["data"], LETTER)
    rows_of = {"train": slice(0, 16000), "test": slice(16000, None), "all": slice(None)}[split]
    return features.to_numpy(np.float32)[rows_of], encode_labels(classes[rows_of])


def read_pendigits(raw: RawFiles, split: str):
    read = [read_uci(raw[part], PENDIGITS) for part in parts_of(split)]
    x = np.concatenate([features.to_numpy(np.float32) for features, _ in read])
    return x, np.concatenate([classes for _, classes in read]).astype(np.int64)


def read_mushroom(raw: RawFiles, split: str):
    """Class first (e/p), 22 one-character categorical attributes one-hot encoded; '?' is its own category."""
    features, classes = read_uci(raw["data"], MUSHROOM)
    onehot = pd.get_dummies(features, prefix=[f"a{j}" for j in range(1, 23)]).sort_index(axis=1)
    return onehot.to_numpy(np.float32), encode_labels(classes)


def read_magic(raw: RawFiles, split: str):
    features, classes = read_uci(raw["data"], MAGIC)
    return features.to_numpy(np.float32), encode_labels(classes)


def read_covertype(raw: RawFiles, split: str):
    features, classes = read_uci(raw["data"], COVERTYPE)
    return features.to_numpy(np.float32), classes.astype(np.int64) - 1


# ---------------------------------------------------------------- families


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    spec: Callable[[str], RawSpec]
    read: Callable[[RawFiles, str], tuple[np.ndarray, np.ndarray]]
    normalise: str  # default normalisation
    images: bool = False
    colour: bool = False  # colour images: MNIST's grey-level mean/std does not apply
    files: str = ""  # the raw files accepted, in words


def idx_spec(dataset: str, base: str, hashes: dict[str, str], prefix: str = ""):
    def spec(split: str) -> RawSpec:
        members = idx_members(prefix, split)
        downloads = tuple(Download(base + names[0], names[0], hashes[names[0]]) for names in members.values())
        return RawSpec(dataset, downloads, members)

    return spec


MNIST_HASHES = {
    "train-images-idx3-ubyte.gz": "sha256:440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    "train-labels-idx1-ubyte.gz": "sha256:3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    "t10k-images-idx3-ubyte.gz": "sha256:8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "t10k-labels-idx1-ubyte.gz": "sha256:f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
}
FASHION_HASHES = {
    "train-images-idx3-ubyte.gz": "sha256:3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
    "train-labels-idx1-ubyte.gz": "sha256:a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
    "t10k-images-idx3-ubyte.gz": "sha256:346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
    "t10k-labels-idx1-ubyte.gz": "sha256:67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
}
UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"


def emnist_spec(split: str) -> RawSpec:
    """The NIST zip holds gzip/emnist-letters-{train,test}-{images-idx3,labels-idx1}-ubyte.gz."""
    zipped = Download(
        "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip",
        "emnist-gzip.zip",
        "sha256:fb9bb67e33772a9cc0b895e4ecf36d2cf35be8b709693c3564cea2a019fcda8e",
    )
    members = {}
    for part in ("train", "test") if split == "all" else (split,):
        members[f"{part}_images"] = (f"emnist-letters-{part}-images-idx3-ubyte.gz",)
        members[f"{part}_labels"] = (f"emnist-letters-{part}-labels-idx1-ubyte.gz",)
    return RawSpec("emnist-letters", (zipped,), members)


# UCI publishes no checksums, but its .names files give the row counts; a file with fewer or more
# lines is refused (unless --no-verify).
UCI_ROWS = {
    "shuttle.trn": 43_500,
    "shuttle.trn.Z": 43_500,
    "shuttle.tst": 14_500,
    "letter-recognition.data": 20_000,
    "pendigits.tra": 7_494,
    "pendigits.tes": 3_498,
    "agaricus-lepiota.data": 8_124,
    "magic04.data": 19_020,
    "covtype.data": 581_012,  # a decompressed copy; the published .gz is verified by its sha256
}


def uci_spec(dataset: str, files: dict[str, tuple[str, ...]], path: str) -> Callable[[str], RawSpec]:
    def spec(split: str) -> RawSpec:
        downloads = tuple(Download(UCI + path + names[-1], names[-1]) for names in files.values())
        rows = {n: UCI_ROWS[n] for names in files.values() for n in names if n in UCI_ROWS}
        return RawSpec(dataset, downloads, files, member_rows=rows)

    return spec


def split_spec(spec_of: Callable[[str], RawSpec], keys: dict[str, str]) -> Callable[[str], RawSpec]:
    """Only download the parts (train/test files) a split needs."""

    def spec(split: str) -> RawSpec:
        full = spec_of(split)
        wanted = {k: v for k, v in full.members.items() if split == "all" or keys.get(k, split) == split}
        names = {n for v in wanted.values() for n in v}
        return replace(full, downloads=tuple(d for d in full.downloads if d.fname in names), members=wanted)

    return spec


FAMILIES = {
    "mnist": Family(
        "mnist",
        "MNIST digits, 70k 28×28 images (train + test), 10 classes",
        idx_spec("mnist", "https://ossci-datasets.s3.amazonaws.com/mnist/", MNIST_HASHES),
        read_mnist,
        "meanstd",
        images=True,
        files="train-/t10k-{images-idx3,labels-idx1}-ubyte(.gz), in a folder or archive",
    ),
    "fashion-mnist": Family(
        "fashion-mnist",
        "Fashion-MNIST, 70k 28×28 images, 10 classes",
        idx_spec("fashion-mnist", "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/", FASHION_HASHES),
        read_mnist,
        "l2",
        images=True,
        files="the four Fashion-MNIST IDX files (MNIST's names)",
    ),
    "emnist-letters": Family(
        "emnist-letters",
        "EMNIST Letters, 145.6k 28×28 images (transposed on read), 26 classes",
        emnist_spec,
        read_emnist,
        "l2",
        images=True,
        files="gzip.zip or emnist-letters-{train,test}-{images-idx3,labels-idx1}-ubyte.gz",
    ),
    "notmnist": Family(
        "notmnist",
        "notMNIST small, ≈18.7k 28×28 letter images A–J, 10 classes",
        lambda split: RawSpec(
            "notmnist",
            (
                Download(
                    "https://commondatastorage.googleapis.com/books1000/notMNIST_small.tar.gz", "notMNIST_small.tar.gz"
                ),
            ),
            {"images": ("notMNIST_small.tar.gz", "notMNIST_small"), **idx_members("", "all")},
            optional=("images", *IDX_NAMES),
        ),
        read_notmnist,
        "l2",
        images=True,
        files="notMNIST_small.tar.gz or its folder A..J/*.png, or the IDX files of a notMNIST mirror",
    ),
    "cifar10": Family(
        "cifar10",
        "CIFAR-10, 60k 32×32 colour images (50k train + 10k test), 3072 features, 10 classes",
        cifar10_spec,
        read_cifar10,
        "l2",
        images=True,
        colour=True,
        files="cifar-10-python.tar.gz or its folder cifar-10-batches-py/ (data_batch_1..5, test_batch); "
        "the binary release cifar-10-binary.tar.gz or cifar-10-batches-bin/ (*.bin)",
    ),
    "shuttle": Family(
        "shuttle",
        "UCI Statlog Shuttle, 58k rows, 9 features, 7 classes (78% class 1)",
        split_spec(
            uci_spec(
                "shuttle", {"train": ("shuttle.trn", "shuttle.trn.Z"), "test": ("shuttle.tst",)}, "statlog/shuttle/"
            ),
            {"train": "train", "test": "test"},
        ),
        read_shuttle,
        "l2",
        files="shuttle.trn(.Z) and shuttle.tst",
    ),
    "letter": Family(
        "letter",
        "UCI Letter Recognition, 20k rows, 16 features, 26 classes",
        uci_spec("letter", {"data": ("letter-recognition.data",)}, "letter-recognition/"),
        read_letter,
        "l2",
        files="letter-recognition.data",
    ),
    "pendigits": Family(
        "pendigits",
        "UCI Pen-Based Digits, 10,992 rows, 16 features, 10 classes",
        split_spec(
            uci_spec("pendigits", {"train": ("pendigits.tra",), "test": ("pendigits.tes",)}, "pendigits/"),
            {"train": "train", "test": "test"},
        ),
        read_pendigits,
        "l2",
        files="pendigits.tra and pendigits.tes",
    ),
    "mushroom": Family(
        "mushroom",
        "UCI Mushroom, 8124 rows, 22 categorical attributes one-hot, 2 classes",
        uci_spec("mushroom", {"data": ("agaricus-lepiota.data",)}, "mushroom/"),
        read_mushroom,
        "l2",
        files="agaricus-lepiota.data",
    ),
    "magic": Family(
        "magic",
        "UCI MAGIC Gamma Telescope, 19,020 rows, 10 features, 2 classes",
        uci_spec("magic", {"data": ("magic04.data",)}, "magic/"),
        read_magic,
        "l2",
        files="magic04.data",
    ),
    "covertype": Family(
        "covertype",
        "UCI Covertype, 581,012 rows, 54 features, 7 classes",
        lambda split: RawSpec(
            "covertype",
            (
                Download(
                    "https://ndownloader.figshare.com/files/5976039",
                    "covtype.data.gz",
                    "sha256:614360d0257557dd1792834a85a1cdebfadc3c4f30b011d56afee7ffb5b15771",
                ),
            ),
            {"data": ("covtype.data.gz", "covtype.data")},
            member_rows={"covtype.data": UCI_ROWS["covtype.data"]},
        ),
        read_covertype,
        "l2",
        files="covtype.data(.gz)",
    ),
}


UCI_SETS = tuple(name for name, family in FAMILIES.items() if family.description.startswith("UCI "))


def apply_normalisation(x: np.ndarray, how: str, images: bool, colour: bool = False) -> np.ndarray:
    if how == "meanstd":
        if not images or colour:
            kind = "colour images" if images else "tabular data"
            raise UserError(f"--normalise meanstd is MNIST's pixel standardisation; use l2 or none for {kind}")
        return ((x - MNIST_MEAN) / MNIST_STD).astype(np.float32)
    if how == "l2":
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0).astype(np.float32, copy=False)
    return x.astype(np.float32, copy=False)


def samples_table(x: np.ndarray, y: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame(x, columns=[f"x_{j}" for j in range(x.shape[1])])
    frame["label"] = y
    return frame


def prepare(
    data_dir: Path,
    name: str,
    *,
    split: str = "all",
    normalise: str | None = None,
    encoding: str = "block",
    verify: bool = True,
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
) -> Path:
    family = FAMILIES[name]
    normalisation = normalise or family.normalise
    for flag, value, choices in (
        ("--split", split, SPLITS),
        ("--normalise", normalisation, NORMALISATIONS),
        ("--encoding", encoding, ENCODINGS),
    ):
        if value not in choices:
            raise UserError(f"unknown {flag} {value!r}; choose from: {', '.join(choices)}")
    if normalisation == "meanstd" and (not family.images or family.colour):  # refused before anything is read
        apply_normalisation(np.zeros((0, 1), np.float32), normalisation, family.images, family.colour)
    if split != "all" and name in ("mushroom", "magic", "covertype", "notmnist"):
        raise UserError(f"{name} has no published train/test split; use --split all")
    parameters = {"split": split, "normalise": normalisation, "encoding": encoding, "verify": verify}
    folder = Path(data_dir) / name
    if up_to_date(folder, parameters, force):
        return folder
    with raw_files(family.spec(split), source, offline, cache, verify) as raw:
        x, y = family.read(raw, split)
    x = apply_normalisation(x, normalisation, family.images, family.colour)
    counts = {
        "samples": len(y),
        "features": x.shape[1],
        "classes": int(y.max()) + 1,
        **{f"class_{c}": int(n) for c, n in enumerate(np.bincount(y))},
    }
    return write_dataset(
        folder,
        name,
        {"samples": samples_table(x, y)},
        parameters,
        protocol="classification",
        raw_files=raw.records,
        counts=counts,
        force=force,
        rows=rows_report(len(y) + sum(raw.dropped.values()), raw.dropped),
        verification=raw.verification,
        reader_warnings=raw.warnings,
    )


def prepare_mixture(data_dir: Path, *, encoding: str = "shift", force: bool = False) -> Path:
    """MNIST + notMNIST, 20 users (notMNIST classes 0–9, MNIST classes 10–19) in 2 groups (Meta-Ban §4.3),
    built from the prepared ``mnist`` and ``notmnist`` with their own normalisations (the code: MNIST
    mean/std, notMNIST row L2). The protocol picks either source with probability 1/2 each round."""
    from banditbench.data.prepared import load_dataset

    if encoding not in ENCODINGS:
        raise UserError(f"unknown --encoding {encoding!r}; choose from: {', '.join(ENCODINGS)}")
    parts = [load_dataset(data_dir, name) for name in ("notmnist", "mnist")]
    parameters = {"encoding": encoding, **{f"{p.name}_manifest_sha256": p.manifest_sha256 for p in parts}}
    folder = Path(data_dir) / "mnist-notmnist"
    if up_to_date(folder, parameters, force):
        return folder
    tables = []
    for source, part in enumerate(parts):
        table = part.table("samples")
        table["source"] = source
        tables.append(table)
    if tables[0].shape[1] != tables[1].shape[1]:
        raise UserError(f"notmnist has {tables[0].shape[1] - 2} features but mnist {tables[1].shape[1] - 2}")
    samples = pd.concat(tables, ignore_index=True)
    counts = {"samples": len(samples), "notmnist": len(tables[0]), "mnist": len(tables[1]), "users": 20}
    return write_dataset(
        folder,
        "mnist-notmnist",
        {"samples": samples},
        parameters,
        protocol="classification",
        raw_files=[r for p in parts for r in p.manifest["raw_files"]],
        counts=counts,
        force=force,
    )


def declare(family: Family) -> Dataset:
    """One `prepare NAME` per family, all with the same options (only the default normalisation differs)."""

    def run(data_dir, **values):
        return prepare(data_dir, family.name, **values)

    return Dataset(
        family.name,
        family.description,
        "M-CNB §5.3; Meta-Ban §4.3",
        "classification",
        run,
        (
            Option("split", str, "all", "all | train | test (where the data has a split).", choices=SPLITS),
            Option(
                "normalise",
                str,
                family.normalise,
                "meanstd (MNIST 0.1307/0.3081) | l2 (row unit norm, Bandit_multi) | none.",
                choices=NORMALISATIONS,
            ),
            Option(
                "encoding",
                str,
                "block",
                "Arm contexts: block (d·K, M-CNB) | shift (d + K − 1, Meta-Ban's code).",
                choices=ENCODINGS,
            ),
        ),
        raw=family.spec,
        files=family.files,
    )


for _family in FAMILIES.values():
    register(declare(_family))

register(
    Dataset(
        "mnist-notmnist",
        "MNIST + notMNIST: 20 users (classes of either) in 2 groups, shift encoding d + 9",
        "Meta-Ban §4.3; M-CNB §5.3",
        "classification",
        prepare_mixture,
        (Option("encoding", str, "shift", "shift (d + 9 = 793, Meta-Ban) | block (d·K).", choices=ENCODINGS),),
        reads_raw=False,
        files="none: built from the prepared mnist and notmnist",
    )
)
