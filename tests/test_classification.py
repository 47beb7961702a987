import io
import tarfile

import numpy as np
import pytest
from fixtures_raw import SHARED, covertype_rows, write_covertype, write_idx

from banditbench.data import classification, load_dataset
from banditbench.envs.classification import ClassificationEnvironment
from banditbench.errors import UserError


def prepare(tmp_path, name, source, **kwargs):
    """Self-made files carry the published names but not the published bytes: skip the checksums."""
    fake = not str(source).startswith(str(SHARED))
    classification.prepare(tmp_path / "ds", name, source=str(source), offline=True, verify=not fake, **kwargs)
    return load_dataset(tmp_path / "ds", name)


def mnist_folder(tmp_path, n=30, prefix=""):
    rng = np.random.default_rng(0)
    folder = tmp_path / "raw"
    folder.mkdir(exist_ok=True)
    arrays = {}
    for part, stem in (("train", "train"), ("test", "t10k" if not prefix else "test")):
        images = rng.integers(0, 256, size=(n, 28, 28))
        labels = np.arange(n) % (26 if prefix else 10) + (1 if prefix else 0)
        write_idx(folder / f"{prefix}{stem}-images-idx3-ubyte.gz", images)
        write_idx(folder / f"{prefix}{stem}-labels-idx1-ubyte.gz", labels)
        arrays[part] = (images, labels)
    return folder, arrays


def features(dataset):
    samples = dataset.table("samples")
    return samples.filter(like="x_").to_numpy(), samples["label"].to_numpy()


def test_mnist_fixture_meanstd_and_l2(tmp_path):
    folder, arrays = mnist_folder(tmp_path)
    with pytest.raises(UserError, match="train-images-idx3-ubyte.gz: checksum mismatch, expected sha256 440fcabf"):
        classification.prepare(tmp_path / "ds", "mnist", source=str(folder), offline=True)
    x, y = features(prepare(tmp_path, "mnist", folder))
    images = np.concatenate([arrays["train"][0], arrays["test"][0]]).reshape(60, -1)
    np.testing.assert_allclose(x, (images / 255 - 0.1307) / 0.3081, rtol=1e-5, atol=1e-5)
    assert list(y) == list(np.arange(30) % 10) * 2
    x, _ = features(prepare(tmp_path, "mnist", folder, normalise="l2", split="test", force=True))
    assert x.shape == (30, 784)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1, rtol=1e-5)


def test_emnist_images_are_transposed_and_labels_start_at_zero(tmp_path):
    folder, arrays = mnist_folder(tmp_path, n=26, prefix="emnist-letters-")
    x, y = features(prepare(tmp_path, "emnist-letters", folder, normalise="none", split="train"))
    np.testing.assert_allclose(x[3].reshape(28, 28), arrays["train"][0][3].T / 255, atol=1e-6)
    assert list(y) == list(range(26))


def test_notmnist_tar_skips_corrupt_pngs(tmp_path):
    from PIL import Image

    path = tmp_path / "notMNIST_small.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for k, letter in enumerate("ABCDEFGHIJ"):
            for j in range(2):
                buffer = io.BytesIO()
                Image.fromarray(np.full((28, 28), 10 * k + j, np.uint8)).save(buffer, format="PNG")
                blob = buffer.getvalue() if (k, j) != (3, 1) else b"not a png"
                info = tarfile.TarInfo(f"notMNIST_small/{letter}/img{j}.png")
                info.size = len(blob)
                tar.addfile(info, io.BytesIO(blob))
    dataset = prepare(tmp_path, "notmnist", path, normalise="none")
    x, y = features(dataset)
    assert len(y) == 19 and np.bincount(y).tolist() == [2, 2, 2, 1, 2, 2, 2, 2, 2, 2]
    assert dataset.manifest["sanity"]["rows"] == {"read": 20, "kept": 19, "dropped": {"PNG unreadable or not 28×28": 1}}
    np.testing.assert_allclose(x[y == 4][1], 41 / 255, rtol=1e-6)


def test_letter_splits_its_20_000_rows_into_the_first_16_000_for_training_and_the_rest_for_testing(tmp_path):
    raw = tmp_path / "uci"
    raw.mkdir()
    rows = [f"{'AB'[i % 2]},{1 if i < 16000 else 2}" + ",0" * 15 for i in range(20000)]
    (raw / "letter-recognition.data").write_text("\n".join(rows) + "\n")
    for split, n, value in (("train", 16000, 1), ("test", 4000, 2)):
        x, _ = features(prepare(tmp_path, "letter", raw, normalise="none", split=split, force=True))
        assert x.shape == (n, 16) and (x[:, 0] == value).all()


def test_l2_leaves_an_all_zero_row_at_zero():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(classification.apply_normalisation(x, "l2", images=False), [[0.6, 0.8], [0, 0]], 1e-6)


def test_uci_tables(tmp_path):
    raw = tmp_path / "uci"
    raw.mkdir()
    (raw / "letter-recognition.data").write_text(
        "T,2,8,3,5,1,8,13,0,6,6,10,8,0,8,0,8\nI,5,12,3,7,2,10,5,5,4,13,3,9,2,8,4,10\n"
        "A,3,4,4,3,2,8,3,5,8,6,6,8,3,7,2,7\n"
    )
    (raw / "pendigits.tra").write_text(
        " 47,100, 27, 81, 57, 37, 26,  0,  0, 23, 56, 53,100, 90, 40, 98,  8\n"
        "  0, 89, 27,100, 42, 75, 29, 45, 15, 15, 37,  0, 69,  2,100,  6,  2\r\n"
    )
    (raw / "pendigits.tes").write_text(" 88, 92,  2, 99, 16, 66, 94, 37, 70,  0,  0, 24, 42, 65,100,100,  8\n")
    (raw / "magic04.data").write_text(
        "28.7967,16.0021,2.6449,0.3918,0.1982,27.7004,22.011,-8.2027,40.092,81.8828,g\n"
        "31.6036,11.7235,2.5185,0.5303,0.3773,26.2722,23.8238,-9.9574,6.3609,205.261,h\n"
    )
    (raw / "agaricus-lepiota.data").write_text(
        "p,x,s,n,t,p,f,c,n,k,e,e,s,s,w,w,p,w,o,p,k,s,u\n"
        "e,x,s,y,t,a,f,c,b,k,e,c,s,s,w,w,p,w,o,p,n,n,g\n"
        "e,b,s,w,t,l,f,c,b,n,e,?,s,s,w,w,p,w,o,p,n,n,m\n"
    )
    x, y = features(prepare(tmp_path, "letter", raw, normalise="none"))
    assert x.shape == (3, 16) and list(y) == [2, 1, 0]  # A < I < T
    x, y = features(prepare(tmp_path, "pendigits", raw, normalise="none"))
    assert x.shape == (3, 16) and list(y) == [8, 2, 8] and x[1, 1] == 89
    x, y = features(prepare(tmp_path, "magic", raw))
    assert list(y) == [0, 1]
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1, rtol=1e-5)
    x, y = features(prepare(tmp_path, "mushroom", raw, normalise="none"))
    assert list(y) == [1, 0, 0]
    assert np.all(x.sum(axis=1) == 22)  # one-hot: one category per attribute, '?' included
    assert x.shape[1] == sum(
        len(set(col)) for col in zip(*[r.split(",")[1:] for r in (raw / "agaricus-lepiota.data").read_text().split()])
    )


@pytest.mark.parametrize("compressed", [True, False])
def test_covertype_reads_the_published_gzip_or_its_decompressed_file(tmp_path, compressed):
    rows = covertype_rows()
    raw = write_covertype(tmp_path / "raw", rows, compressed)
    x, y = features(prepare(tmp_path, "covertype", raw, normalise="none"))
    np.testing.assert_array_equal(x, rows[:, :54])
    np.testing.assert_array_equal(y, rows[:, 54] - 1)  # classes 1 … 7 → 0 … 6


def test_shuttle_compressed_training_file(tmp_path):
    ncompress = pytest.importorskip("ncompress")  # the test extra installs it
    raw = tmp_path / "shuttle"
    raw.mkdir()
    rows = b"50 21 77 0 28 0 27 48 22 2\n55 0 92 0 0 26 36 92 56 4\n53 0 82 0 52 -5 29 30 2 1\n"
    (raw / "shuttle.trn.Z").write_bytes(ncompress.compress(rows))  # UCI serves the training file compress'ed
    (raw / "shuttle.tst").write_text("37 0 79 0 12 0 42 67 25 1\n")
    x, y = features(prepare(tmp_path, "shuttle", raw, normalise="none"))
    assert x.shape == (4, 9) and list(y) == [1, 3, 0, 0] and x[2, 5] == -5


@pytest.mark.skipif(not (SHARED / "uci-shuttle" / "shuttle.trn").is_file(), reason="genuine shuttle not available")
def test_genuine_shuttle(tmp_path):
    dataset = prepare(tmp_path, "shuttle", SHARED / "uci-shuttle")
    counts = dataset.manifest["counts"]
    assert [counts[f"class_{c}"] for c in range(7)] == [45586, 50, 171, 8903, 3267, 10, 13]
    assert counts["features"] == 9


@pytest.mark.skipif(not (SHARED / "mnist-test" / "t10k-images-idx3-ubyte.gz").is_file(), reason="no MNIST test set")
def test_genuine_mnist_test_set_and_protocol(tmp_path):
    dataset = prepare(tmp_path, "mnist", SHARED / "mnist-test", split="test")
    x, y = features(dataset)
    assert x.shape == (10000, 784) and np.bincount(y).tolist() == [
        980,
        1135,
        1032,
        1010,
        982,
        892,
        958,
        1028,
        974,
        1009,
    ]
    assert abs(x.mean() - 0.0) < 0.05 and abs(x.std() - 1.0) < 0.05  # (x − 0.1307)/0.3081 standardises MNIST
    sha = {r["file"]: r["sha256"] for r in dataset.manifest["raw_files"]}
    assert sha["t10k-images-idx3-ubyte.gz"] == "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"
    with pytest.raises(UserError, match="train-images-idx3-ubyte"):  # --split all needs the train files too
        prepare(tmp_path / "other", "mnist", SHARED / "mnist-test")


def test_block_and_shift_encodings(tmp_path):
    folder, _ = mnist_folder(tmp_path)
    dataset = prepare(tmp_path, "mnist", folder, split="test", normalise="l2")
    env = ClassificationEnvironment(dataset, np.random.SeedSequence(0))
    x, y = features(dataset)
    assert env.dim == 7840 and env.n_users == 10 and env.n_arms == 10
    seen = []
    for rnd in env.rounds(60):  # 30 instances: two passes, each over a fresh permutation
        row = int(np.flatnonzero((x == rnd.arms[0, :784]).all(axis=1))[0])
        seen.append(row)
        assert rnd.user == y[row] and rnd.rewards[y[row]] == 1 and rnd.rewards.sum() == 1
        np.testing.assert_array_equal(rnd.arms[7, 7 * 784 : 8 * 784], x[row])
        assert np.count_nonzero(rnd.arms[7, : 7 * 784]) == 0
    assert sorted(seen[:30]) == sorted(seen[30:]) == list(range(30)) and seen[:30] != seen[30:]
    dataset = prepare(tmp_path, "mnist", folder, split="test", normalise="l2", encoding="shift", force=True)
    env = ClassificationEnvironment(dataset, np.random.SeedSequence(0))
    rnd = next(env.rounds(1))
    assert rnd.arms.shape == (10, 793)
    np.testing.assert_array_equal(rnd.arms[3, 3:787], rnd.arms[0, :784])


def test_mnist_notmnist_mixture(tmp_path):
    folder, _ = mnist_folder(tmp_path)
    prepare(tmp_path, "mnist", folder, split="test")
    classification.prepare(
        tmp_path / "ds", "fashion-mnist", source=str(folder), offline=True, split="test", verify=False
    )
    # notMNIST stand-in: the fashion fixture's table under the notmnist name (same 784 features, 10 classes)
    (tmp_path / "ds" / "fashion-mnist").rename(tmp_path / "ds" / "notmnist")
    classification.prepare_mixture(tmp_path / "ds")
    dataset = load_dataset(tmp_path / "ds", "mnist-notmnist")
    env = ClassificationEnvironment(dataset, np.random.SeedSequence(0))
    assert env.n_users == 20 and env.n_arms == 10 and env.dim == 793
    assert list(env.true_groups) == [0] * 10 + [1] * 10
    rounds = list(env.rounds(400))
    from_mnist = np.mean([r.user >= 10 for r in rounds])
    assert 0.4 < from_mnist < 0.6  # each source with probability 1/2, whatever their sizes
    assert all(r.group == r.user // 10 and r.rewards[r.user % 10] == 1 for r in rounds)
