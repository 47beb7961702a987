"""CIFAR-10 (Krizhevsky 2009) on self-made batches in the real Python and binary formats."""

import hashlib
import json
import pickle
import tarfile
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import banditbench
from fixtures_raw import CIFAR_BATCHES, cifar_batches, write_cifar_binary, write_cifar_python

from banditbench import presets
from banditbench.algos import ALGORITHMS
from banditbench.algos.ridge import RidgeStats
from banditbench.data import classification, load_dataset
from banditbench.data.fetch import Download, check_hashes
from banditbench.errors import UserError
from banditbench.runner import experiment
from banditbench.runner.settings import RunSettings


def prepare(tmp_path, source, **kwargs):
    """Self-made files carry the published names but not the published bytes: skip the checksums."""
    classification.prepare(tmp_path / "ds", "cifar10", source=str(source), offline=True, verify=False, **kwargs)
    return load_dataset(tmp_path / "ds", "cifar10")


def features(dataset):
    samples = dataset.table("samples")
    return samples.filter(like="x_").to_numpy(), samples["label"].to_numpy()


def expected_pixels(batches, names=CIFAR_BATCHES):
    return np.concatenate([batches[n][0] for n in names]).astype(np.float64) / 255


def test_python_tarball_gives_train_then_test_rows_l2_normalised_by_default(tmp_path):
    batches = cifar_batches()
    dataset = prepare(tmp_path, write_cifar_python(tmp_path / "raw", batches))
    x, y = features(dataset)
    assert x.shape == (120, 3072) and dataset.parameters["normalise"] == "l2"
    pixels = expected_pixels(batches)
    np.testing.assert_allclose(x, pixels / np.linalg.norm(pixels, axis=1, keepdims=True), rtol=1e-5)
    assert list(y) == [int(v) for n in CIFAR_BATCHES for v in batches[n][1]]
    counts = dataset.manifest["counts"]
    assert (counts["samples"], counts["features"], counts["classes"]) == (120, 3072, 10)
    assert [counts[f"class_{c}"] for c in range(10)] == [12] * 10
    assert dataset.manifest["verification"] == "unverified"


def test_channel_major_pixels_divided_by_255_without_normalisation(tmp_path):
    batches = cifar_batches(per_batch=10)
    batches["data_batch_1"][0][0] = np.repeat(np.array([255, 0, 51], np.uint8), 1024)  # pure red + a little blue
    x, _ = features(prepare(tmp_path, write_cifar_python(tmp_path / "raw", batches, tar=False), normalise="none"))
    np.testing.assert_allclose(x[0, :1024], 1.0)
    np.testing.assert_allclose(x[0, 1024:2048], 0.0)
    np.testing.assert_allclose(x[0, 2048:], 0.2, rtol=1e-6)
    np.testing.assert_allclose(x, expected_pixels(batches), rtol=1e-6)


def test_splits_read_only_their_batches(tmp_path):
    batches = cifar_batches(per_batch=10)
    folder = write_cifar_python(tmp_path / "raw", batches, tar=False)
    (folder / "test_batch").unlink()  # a train split does not need it
    x, _ = features(prepare(tmp_path, folder, split="train", normalise="none"))
    np.testing.assert_allclose(x, expected_pixels(batches, CIFAR_BATCHES[:5]), rtol=1e-6)
    with pytest.raises(UserError, match="lacks 1 file cifar10 needs: test_batch or test_batch.bin"):
        prepare(tmp_path, folder, split="test", force=True)


def test_binary_release_reads_the_same_samples(tmp_path):
    batches = cifar_batches(per_batch=10)
    x_python, y_python = features(prepare(tmp_path / "a", write_cifar_python(tmp_path / "py", batches)))
    x_binary, y_binary = features(prepare(tmp_path / "b", write_cifar_binary(tmp_path / "bin", batches)))
    np.testing.assert_array_equal(x_binary, x_python)
    np.testing.assert_array_equal(y_binary, y_python)


def test_prepare_is_deterministic_and_default_protocol_pickles_load_too(tmp_path):
    batches = cifar_batches(per_batch=10)
    first = prepare(tmp_path / "a", write_cifar_python(tmp_path / "one", batches))
    second = prepare(tmp_path / "b", write_cifar_python(tmp_path / "two", batches, protocol=pickle.HIGHEST_PROTOCOL))
    table = first.manifest["tables"]["samples"]["file"]
    assert (first.path / table).read_bytes() == (second.path / table).read_bytes()


def test_meanstd_is_refused_for_colour_images_before_reading(tmp_path):
    with pytest.raises(UserError, match="MNIST's pixel standardisation; use l2 or none for colour images"):
        prepare(tmp_path, tmp_path / "does-not-matter", normalise="meanstd")


class Exploit:
    def __init__(self, call, argument):
        self.call, self.argument = call, argument

    def __reduce__(self):
        return self.call, (self.argument,)


@pytest.mark.parametrize("call", ["os.system", "builtins.eval"])
def test_a_pickle_calling_anything_but_numpy_is_refused_and_nothing_runs(tmp_path, call):
    import builtins
    import os

    marker = tmp_path / "pwned"
    batches = cifar_batches(per_batch=10)
    folder = write_cifar_python(tmp_path / "raw", batches, tar=False)
    payload = f"touch {marker}" if call == "os.system" else f"open({str(marker)!r}, 'w').close()"
    function = os.system if call == "os.system" else builtins.eval
    (folder / "data_batch_3").write_bytes(pickle.dumps({b"data": Exploit(function, payload), b"labels": []}))
    with pytest.raises(UserError) as error:
        prepare(tmp_path, folder)
    message = str(error.value)
    assert len(message.splitlines()) == 1 and "data_batch_3: refused, the pickle calls" in message
    assert ("posix.system" in message or "os.system" in message) if call == "os.system" else "builtins.eval" in message
    assert not marker.exists()


def test_truncated_archive_and_batches_are_one_line_errors(tmp_path):
    batches = cifar_batches(per_batch=10)
    tarball = write_cifar_python(tmp_path / "raw", batches)
    cut = tmp_path / "cut" / "cifar-10-python.tar.gz"
    cut.parent.mkdir()
    cut.write_bytes(tarball.read_bytes()[: tarball.stat().st_size // 2])
    with pytest.raises(UserError, match="cifar-10-python.tar.gz: (corrupt archive|cannot read it)") as error:
        prepare(tmp_path, cut)
    assert len(str(error.value).splitlines()) == 1
    folder = tmp_path / "raw" / "cifar-10-batches-py"
    pickled = (folder / "data_batch_2").read_bytes()
    (folder / "data_batch_2").write_bytes(pickled[: len(pickled) // 2])
    with pytest.raises(UserError, match=r"data_batch_2: cannot read it as a CIFAR-10 Python batch"):
        prepare(tmp_path, folder)
    binary = write_cifar_binary(tmp_path / "bin", batches)
    (binary / "test_batch.bin").write_bytes((binary / "test_batch.bin").read_bytes()[:-5])
    with pytest.raises(UserError, match=r"test_batch.bin: .*not a whole number of 3073-byte records"):
        prepare(tmp_path, binary)


@pytest.mark.parametrize("label", [-1, 10])
def test_a_label_outside_the_ten_classes_is_refused(tmp_path, label):
    batches = cifar_batches(per_batch=10)
    batches["data_batch_3"][1][4] = label
    with pytest.raises(UserError, match=f"data_batch_3: label {label} outside 0..9"):
        prepare(tmp_path, write_cifar_python(tmp_path / "raw", batches))


def test_a_missing_batch_is_named(tmp_path):
    folder = write_cifar_python(tmp_path / "raw", cifar_batches(per_batch=10), tar=False)
    (folder / "data_batch_4").unlink()
    with tarfile.open(tmp_path / "cifar-10-python.tar.gz", "w:gz") as archive:
        archive.add(folder, arcname="cifar-10-batches-py")
    for source in (folder, tmp_path / "cifar-10-python.tar.gz"):
        with pytest.raises(UserError, match="lacks 1 file cifar10 needs: data_batch_4 or data_batch_4.bin;"):
            prepare(tmp_path, source)


def test_the_archive_is_checked_against_the_published_md5_and_the_pinned_sha256(tmp_path):
    path = tmp_path / "cifar-10-python.tar.gz"
    path.write_bytes(b"not the release")
    md5, sha256 = hashlib.md5(path.read_bytes()).hexdigest(), hashlib.sha256(path.read_bytes()).hexdigest()
    check_hashes(path, Download("u", path.name, f"md5:{md5}", sha256=sha256))
    with pytest.raises(UserError, match=f"checksum mismatch, expected sha256 {'0' * 64}, found sha256 {sha256}"):
        check_hashes(path, Download("u", path.name, f"md5:{md5}", sha256="0" * 64))
    download = classification.cifar10_spec("all").downloads[0]
    assert download.hashes() == (
        "md5:c58f30108f718f92721af3b95e74349a",
        "sha256:6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
    )
    with pytest.raises(UserError, match="expected md5 c58f30108f718f92721af3b95e74349a"):
        classification.prepare(tmp_path / "ds", "cifar10", source=str(path), offline=True)


def test_a_verified_archive_records_its_pinned_sha256(tmp_path, monkeypatch):
    tarball = write_cifar_python(tmp_path / "raw", cifar_batches(per_batch=10))
    blob = tarball.read_bytes()
    pinned = Download(
        "u", tarball.name, f"md5:{hashlib.md5(blob).hexdigest()}", sha256=hashlib.sha256(blob).hexdigest()
    )
    spec = classification.cifar10_spec
    family = classification.FAMILIES["cifar10"]
    monkeypatch.setitem(
        classification.FAMILIES,
        "cifar10",
        classification.Family(**{**vars(family), "spec": lambda split: _with_download(spec(split), pinned)}),
    )
    classification.prepare(tmp_path / "ds", "cifar10", source=str(tarball), offline=True)
    manifest = json.loads((tmp_path / "ds" / "cifar10" / "manifest.json").read_text())
    assert manifest["verification"] == "verified"
    assert {r["archive_sha256"] for r in manifest["raw_files"]} == {pinned.sha256}


def _with_download(spec, download):
    return replace(spec, downloads=(download,))


def test_mcnb_cifar10_preset_is_ready():
    assert presets.missing_for("mcnb-cifar10") == []
    assert presets.PRESETS["mcnb-cifar10"]["dataset"] == "cifar10"


BLOCK_AWARE = ["linucb-one", "linucb-ind", "club", "sclub", "locb", "cofiba"]  # statistics built at the first round
DENSE = ["dynucb", "bass", "oful-ind", "cmlb", "sclb", "pmlb"]
GROWING = ["locb", "cofiba"]  # LOCB draws its seed users, COFIBA's groups grow: a lower bound


def _matrix_bytes(policy) -> int:
    """The bytes of a policy's d × d (or block) matrices: its ridge statistics' A⁻¹ and G, and its own arrays of
    matrices (BASS's shared sums and inverses)."""
    arrays = []
    for value in vars(policy).values():
        if isinstance(value, RidgeStats):
            arrays += [value.A_inv, value.gram]
        elif isinstance(value, np.ndarray) and value.ndim == 4 and value.dtype == float:  # [members, agents, d, d]
            arrays.append(value)
    return sum(a.nbytes for a in arrays if a is not None)


@pytest.mark.parametrize(
    "name,block", [(name, block) for name in BLOCK_AWARE for block in (None, 4)] + [(name, None) for name in DENSE]
)
def test_ridge_policies_declare_the_matrices_they_allocate(name, block):
    spec = ALGORITHMS[name]
    policy = spec.build(n_users=6, n_arms=3, dim=12, seed=np.random.SeedSequence(0), params={})
    if name in BLOCK_AWARE:
        policy._prepare([SimpleNamespace(block=block)])  # built at its first round: dense, or per block of 4
        stats = [v for v in vars(policy).values() if isinstance(v, RidgeStats)]
        assert stats and all(s.A_inv.shape[-1] == (block or 12) for s in stats)
    allocated = _matrix_bytes(policy)
    declared = spec.state_bytes(n_users=6, n_arms=3, dim=12, params={}, block=block)
    assert declared == allocated if name not in GROWING else 0 < declared <= allocated
    if name in BLOCK_AWARE:  # block-encoded CIFAR-10: 10 users, d·K = 30 720 in blocks of 3 072
        assert spec.state_bytes(n_users=10, n_arms=10, dim=30_720, params={}, block=3072) >= 30_720 * 3072 * 8


def test_a_run_whose_statistics_cannot_fit_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    prepare(tmp_path, write_cifar_python(tmp_path / "raw", cifar_batches(per_batch=10)))
    monkeypatch.setattr(experiment, "physical_memory", lambda: 16 * 2**30)
    settings = dict(dataset="cifar10", rounds=5, seeds=1)
    with pytest.raises(UserError) as error:
        experiment.plan(RunSettings.with_defaults(algos=["neuucb-one", "club"], **settings), data_dir=tmp_path / "ds")
    assert str(error.value) == (
        "club keeps ridge statistics of the 30,720-dimensional contexts of 'cifar10': about 21 GiB for one "
        "unit, more than this machine's 16.0 GiB; leave it out of algos, or prepare cifar10 in the shift encoding "
        "(d + K − 1): `banditbench prepare cifar10 --encoding shift`"
    )
    feasible = RunSettings.with_defaults(algos=["neuucb-one", "mcnb", "neurallinear"], **settings)
    assert experiment.plan(feasible, data_dir=tmp_path / "ds").units


def test_a_run_whose_units_at_once_cannot_hold_their_statistics_is_refused(tmp_path, monkeypatch):
    """One CLUB unit on CIFAR-10's blocks (21 GiB) fits in 24 GiB, two at once do not."""
    prepare(tmp_path, write_cifar_python(tmp_path / "raw", cifar_batches(per_batch=10)))
    monkeypatch.setattr(experiment, "physical_memory", lambda: 24 * 2**30)
    settings = RunSettings.with_defaults(dataset="cifar10", algos=["club"], rounds=5, seeds=2)
    planned = experiment.plan(settings, data_dir=tmp_path / "ds")
    experiment.check_sizes(planned, jobs=1)
    with pytest.raises(UserError) as error:
        experiment.check_sizes(planned, jobs=2)
    assert str(error.value) == (
        "jobs 2 runs 2 units at once, whose statistics need about 42.2 GiB together, more than this machine's "
        "24.0 GiB; lower jobs"
    )


FEASIBLE = ("neuucb-one", "neuucb-ind", "neurallinear", "mcnb")  # the preset's algorithms without dense d·K statistics


@pytest.mark.slow  # four neural units on d·K = 30 720 inputs: about 30 s
def test_a_reduced_mcnb_cifar10_preset_runs_end_to_end_on_the_fixture(tmp_path):
    batches = cifar_batches(per_batch=10)
    done = banditbench(
        "prepare", "cifar10", "--source", write_cifar_python(tmp_path / "raw", batches), "--no-verify",
        "--offline", "--data-dir", tmp_path / "ds",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = {"neuucb-one": ("lam", "nu"), "neuucb-ind": ("lam", "nu"), "neurallinear": ("lam", "alpha")}
    config = tmp_path / "reduced.toml"
    config.write_text(
        f'algos = "{",".join(FEASIBLE)}"\nrounds = 12\nseeds = 1\ntune-seeds = 0\njobs = 1\n[set]\n'
        + "".join(f'"{a}.{r}" = 0.1\n"{a}.{e}" = 0.01\n' for a, (r, e) in names.items())
        + "".join(f'"{a}.train_steps" = 1\n' for a in FEASIBLE)
    )
    out = tmp_path / "run"
    ran = banditbench(
        "run", "--preset", "mcnb-cifar10", "--config", config, "--data-dir", tmp_path / "ds", "--out", out
    )
    assert ran.returncode == 0, ran.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["execution"]["settings"]["preset"] == "mcnb-cifar10" and len(manifest["units"]) == 4
    assert sorted(u.rsplit("-", 2)[0] for u in manifest["units"]) == sorted(FEASIBLE)
