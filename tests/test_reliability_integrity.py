"""Results that cannot lie: a shard swapped, edited or with a flipped bit, a non-finite outcome, a manifest that
contradicts its config, a baseline that cannot say what a regression is. Each is named and refused by `report`
(exit 2, nothing written), and `--resume` runs the unit again with one warning line.

Each test names the guarantee of docs/reliability.md it checks."""

import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_reliability import SETTINGS, main, run, shards, tree  # noqa: E402

from banditbench import api  # noqa: E402
from banditbench.errors import UserError  # noqa: E402
from banditbench.results.shards import BrokenShard, config_sha256, non_finite  # noqa: E402
from banditbench.runner.experiment import execute, plan, prepare_output  # noqa: E402
from banditbench.runner.settings import RunSettings  # noqa: E402

FLIPS = 12  # bytes flipped one at a time, spread over a shard's data pages


@pytest.fixture
def done(data_dir, tmp_path):
    """A finished run (random and linucb-ind, two seeds, 300 rounds) and a copy of its shards' bytes."""
    run(data_dir, tmp_path / "a")
    return tmp_path / "a", shards(tmp_path / "a")


def resume(data_dir, out) -> tuple[list[str], list[str]]:
    """``--resume`` into ``out``: the units it ran and the warning lines it gave."""
    warnings = []
    experiment = plan(RunSettings.with_defaults(**SETTINGS), data_dir=data_dir)
    ran = execute(experiment, prepare_output(out, experiment, overwrite=False, resume=True), out, warn=warnings.append)
    return [u.id for u in ran], warnings


def refused(folder, capsys, *flags) -> str:
    """`report FOLDER` must exit 2 and leave the folder as it was; its stderr."""
    before = tree(folder)
    code, err = main("report", folder, "--format", "md,csv", *flags, capsys=capsys)
    assert code == 2 and "Traceback" not in err, err
    assert tree(folder) == before
    return err


def forge_record(shard: Path, **changes) -> None:
    """Rewrite the shard's checksum record to match its files as they are now (what an edit that also fixes the
    checksums would do), with ``changes`` to its entries."""
    record_file = shard.with_name(shard.name.replace(".parquet", ".sha256.json"))
    record = json.loads(record_file.read_text())
    files = (shard, shard.with_name(shard.name.replace(".parquet", ".timing.parquet")))
    record["sha256"] = {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    record.update(changes)
    record_file.write_text(json.dumps(record))


# ---- shards ---------------------------------------------------------------------------------------------------
def test_a_shard_copied_over_another_units_is_refused_by_report_and_run_again_by_resume(done, data_dir, capsys):
    out, clean = done
    linucb, random = out / "shards" / "linucb-ind-seed0.parquet", out / "shards" / "random-seed0.parquet"
    shutil.copy(linucb, random)
    err = refused(out, capsys)
    assert "random-seed0.parquet: its bytes do not match its checksum record" in err and "nothing was written" in err
    for suffix in (".parquet", ".timing.parquet", ".sha256.json"):  # the whole unit copied, its record too
        shutil.copy(linucb.with_name(f"linucb-ind-seed0{suffix}"), random.with_name(f"random-seed0{suffix}"))
    assert "random-seed0.parquet: it holds unit 'linucb-ind-seed0', not 'random-seed0'" in refused(out, capsys)
    ran, warnings = resume(data_dir, out)
    assert ran == ["random-seed0"] and len(warnings) == 1 and "random-seed0.parquet is broken" in warnings[0]
    assert shards(out) == clean


def test_every_flipped_byte_of_a_shard_is_refused_by_report_and_run_again_by_resume(done, data_dir, capsys):
    out, clean = done
    path = out / "shards" / "linucb-ind-seed1.parquet"
    original = path.read_bytes()
    for where in np.linspace(4, len(original) - 9, FLIPS).astype(int):  # past the magic, before the footer's length
        flipped = bytearray(original)
        flipped[where] ^= 0x10
        path.write_bytes(bytes(flipped))
        assert "linucb-ind-seed1.parquet: its bytes do not match" in refused(out, capsys), where
    ran, warnings = resume(data_dir, out)
    assert ran == ["linucb-ind-seed1"] and len(warnings) == 1 and shards(out) == clean


def test_a_shard_edited_and_rewritten_with_its_metadata_is_refused(done, capsys):
    out, _ = done
    path = out / "shards" / "random-seed1.parquet"
    table = pq.read_table(path)
    regret = table["regret"].to_numpy().copy()
    regret[:100] = 0.0  # a better-looking algorithm
    pq.write_table(table.set_column(table.column_names.index("regret"), "regret", pa.array(regret)), path)
    assert "random-seed1.parquet: its bytes do not match its checksum record" in refused(out, capsys)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_a_non_finite_outcome_is_named_even_when_the_checksums_match(value, done, data_dir, capsys):
    out, clean = done
    path = out / "shards" / "random-seed0.parquet"
    table = pq.read_table(path)
    regret = table["regret"].to_numpy().copy()
    regret[17] = value
    pq.write_table(table.set_column(table.column_names.index("regret"), "regret", pa.array(regret)), path)
    forge_record(path)
    assert f"random-seed0.parquet: its column 'regret' holds {value} at round 17" in refused(out, capsys)
    with pytest.raises(UserError, match="broken result file"):
        api.load(out)
    ran, warnings = resume(data_dir, out)
    assert ran == ["random-seed0"] and "holds" in warnings[0] and shards(out) == clean


def with_metadata(table: pa.Table, **changes) -> pa.Table:
    meta = json.loads(table.schema.metadata[b"banditbench"])
    return table.replace_schema_metadata({b"banditbench": json.dumps({**meta, **changes}).encode()})


@pytest.mark.parametrize(
    "unit, edit, says",
    [
        ("linucb-ind-seed0", lambda table: table.slice(0, table.num_rows - 1), "it has 299 rows for 300 rounds"),
        ("random-seed1", lambda table: with_metadata(table, dataset_manifest_sha256="0" * 64), "another version"),
    ],
    ids=["a-round-short", "another-dataset-version"],
)
def test_a_shard_edited_with_its_checksums_forged_to_match_is_run_again_by_resume(unit, edit, says, done, data_dir):
    out, clean = done
    path = out / "shards" / f"{unit}.parquet"
    pq.write_table(edit(pq.read_table(path)), path)  # a slice keeps the schema's metadata
    forge_record(path)
    ran, warnings = resume(data_dir, out)
    assert ran == [unit] and says in warnings[0] and shards(out) == clean


def another_alpha(path: Path) -> tuple[pa.Table, dict]:
    """linucb-ind's shard at ``path`` as a table and its unit configuration with alpha = 0.5 (the run's sets 1)."""
    table = pq.read_table(path)
    unit = json.loads(table.schema.metadata[b"banditbench"])["unit"]
    unit["params"]["alpha"] = 0.5
    return table, unit


def forged_to_another_alpha(path: Path) -> None:
    """The shard rewritten as a unit of alpha = 0.5, every checksum forged to match."""
    table, unit = another_alpha(path)
    pq.write_table(with_metadata(table, unit=unit, unit_sha256=config_sha256(unit)), path)
    forge_record(path, unit_sha256=config_sha256(unit))


@pytest.mark.parametrize("edited", ["configuration", "its-checksum"])
def test_a_shard_whose_configuration_and_its_checksum_disagree_is_refused(edited, done, capsys):
    """The metadata's unit configuration, the metadata's checksum of it and the record's must all agree: an edit of
    either one alone, with the files' checksums forged to match, is refused."""
    out, _ = done
    path = out / "shards" / "linucb-ind-seed0.parquet"
    table, unit = another_alpha(path)
    edit = {"unit": unit} if edited == "configuration" else {"unit_sha256": config_sha256(unit)}
    pq.write_table(with_metadata(table, **edit), path)
    forge_record(path)
    assert "linucb-ind-seed0.parquet: its configuration does not match its checksum record" in refused(out, capsys)


def test_resume_runs_again_a_shard_holding_another_configuration_of_its_unit(done, data_dir):
    out, clean = done
    forged_to_another_alpha(out / "shards" / "linucb-ind-seed0.parquet")
    ran, warnings = resume(data_dir, out)
    assert ran == ["linucb-ind-seed0"] and "another unit's configuration" in warnings[0] and shards(out) == clean


def test_resume_runs_again_a_shard_whose_timing_sidecar_is_gone(done, data_dir):
    out, clean = done
    (out / "shards" / "random-seed1.timing.parquet").unlink()
    ran, warnings = resume(data_dir, out)
    assert ran == ["random-seed1"] and "timing sidecar random-seed1.timing.parquet is missing" in warnings[0]
    assert shards(out) == clean


def test_a_logs_shard_may_leave_the_reward_of_a_skipped_event_undefined_but_not_of_a_kept_one():
    """A log's evaluator observes no reward where it skips an event (NaN in the shard); a kept event's is finite."""
    non_finite(pa.table({"reward": [1.0, np.nan], "kept": [True, False]}), logged=True)
    with pytest.raises(BrokenShard, match="'reward' holds nan at round 1"):
        non_finite(pa.table({"reward": [1.0, np.nan], "kept": [True, True]}), logged=True)


def test_a_shard_whose_record_is_renamed_to_another_seed_is_the_same_unit_twice(done, capsys):
    out, _ = done
    folder = out / "shards"
    for suffix in (".parquet", ".timing.parquet", ".sha256.json"):
        shutil.copy(folder / f"random-seed0{suffix}", folder / f"random-seed1{suffix}")
    assert "it holds unit 'random-seed0', not 'random-seed1'" in refused(out, capsys)
    forge_record(folder / "random-seed1.parquet", unit_id="random-seed1")
    assert "random-seed1.parquet: it holds the same unit as random-seed0.parquet" in refused(out, capsys)


def test_a_shard_of_a_unit_the_config_does_not_plan_is_refused(done, capsys):
    out, _ = done
    forged_to_another_alpha(out / "shards" / "linucb-ind-seed0.parquet")
    assert "linucb-ind-seed0.parquet: it holds a unit that the manifest's config does not plan" in refused(out, capsys)


def test_a_shard_without_its_checksum_record_is_refused_and_run_again(done, data_dir, capsys):
    out, clean = done
    (out / "shards" / "linucb-ind-seed0.sha256.json").unlink()  # killed between the shard and its record
    assert "linucb-ind-seed0.parquet: it has no checksum record" in refused(out, capsys)
    ran, warnings = resume(data_dir, out)
    assert ran == ["linucb-ind-seed0"] and len(warnings) == 1 and shards(out) == clean


def test_report_and_load_refuse_the_same_folder_named_twice(done, capsys):
    out, _ = done
    err = refused(out, capsys, out.parent / "a" / ".." / "a")
    assert "is named twice" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(UserError, match="named twice"):
        api.load(out, out)


# ---- the manifest ---------------------------------------------------------------------------------------------
def edit_manifest(out: Path, change) -> None:
    manifest = json.loads((out / "manifest.json").read_text())
    change(manifest)
    (out / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m["units"].remove("linucb-ind-seed1"),  # a unit dropped from the plan
        lambda m: m["config"].update(seeds=3),  # more seeds than the run planned
        lambda m: m["config"]["algorithms"].pop("random"),  # an algorithm dropped
        lambda m: m["units"].append("random-seed0"),  # a unit listed twice
    ],
    ids=["unit-dropped", "seeds-raised", "algorithm-dropped", "unit-twice"],
)
def test_a_manifest_that_contradicts_its_own_config_is_refused(edit, done, capsys):
    out, _ = done
    edit_manifest(out, edit)
    err = refused(out, capsys)
    assert "manifest.json" in err and ("contradicts itself" in err or "lists a unit twice" in err)
    assert len(err.strip().splitlines()) == 1


def test_a_report_of_a_run_killed_while_tuning_counts_the_units_still_to_come(done, capsys):
    out, _ = done

    def killed_while_tuning(manifest):  # club's grid was being tuned: its reported units are not listed yet
        manifest["config"]["tune_seeds"] = 1
        manifest["config"]["algorithms"]["club"] = {"alpha": [0.1, 0.2]}
        manifest.update(tuning=None, pending_tuning=["club"])

    edit_manifest(out, killed_while_tuning)
    code, err = main("report", out, "--format", "none", capsys=capsys)
    assert code == 0 and "incomplete: 4 of 6 planned units" in err, err


# ---- the CI gate's baseline -----------------------------------------------------------------------------------
def baseline(tmp_path, datasets) -> Path:
    path = tmp_path / "baseline.json"
    text = json.dumps({"banditbench_baseline": 1, "datasets": datasets})
    path.write_text(text.replace('"NAN"', "NaN").replace('"INF"', "Infinity").replace('"-INF"', "-Infinity"))
    return path


def entry(value) -> dict:
    return {"synthetic": {"random": {"metric": "final_regret", "value": value, "seeds": 2, "rounds": 300}}}


@pytest.mark.parametrize(
    "datasets, says",
    [
        (entry("NAN"), "not a finite number"),
        (entry("INF"), "not a finite number"),
        (entry("-INF"), "not a finite number"),
        (entry("104.5"), "not a number"),
        (entry(True), "not a number"),
        ({"synthetic": {"random": {"metric": "final_regret", "seeds": 2, "rounds": 300}}}, "has no 'value'"),
        ({}, "no entries"),
        ({"synthetic": {}}, "no entries"),
        ({"synthetic": {"random": 3}}, "not an entry"),
    ],
    ids=["nan", "inf", "minus-inf", "string", "bool", "no-value", "empty", "empty-dataset", "not-an-entry"],
)
def test_a_baseline_that_cannot_say_what_a_regression_is_exits_2_not_1(datasets, says, done, tmp_path, capsys):
    out, _ = done
    path = baseline(tmp_path, datasets)
    err = refused(out, capsys, "--check", path)
    assert f"baseline {path}" in err and says in err and len(err.strip().splitlines()) == 1, err


def test_a_real_regression_exits_1(done, tmp_path, capsys):
    out, _ = done
    code, err = main("report", out, "--format", "none", "--check", baseline(tmp_path, entry(1.0)), capsys=capsys)
    assert code == 1


# ---- checkpoints ----------------------------------------------------------------------------------------------
def checkpointed(dataset, folder: Path):
    """linucb-ind's unit (100 rounds) killed after its checkpoint at round 60; the unit and that checkpoint."""
    from test_checkpoints import EVERY, CrashingCheckpoints, Interrupted, unit_of

    from banditbench.runner.unit import run_unit

    unit = unit_of("linucb-ind", "synthetic", "linear")
    with pytest.raises(Interrupted):
        run_unit(unit, dataset, checkpoints=CrashingCheckpoints(folder, EVERY))
    return unit, folder / "checkpoints" / f"{unit.id}.npz"


def forged(path: Path, change) -> None:
    """Change the checkpoint's contents and write it again with a checksum that matches them."""
    from banditbench.runner.checkpoint import read, write

    state = read(path)
    change(state)
    with open(path, "wb") as f:
        write(f, state)


def edited_in_place(path: Path, text: bytes, by: bytes) -> None:
    """Edit the checkpoint's JSON index as a text editor would, leaving its checksum as it was."""
    with np.load(path) as npz:
        entries = {name: npz[name] for name in npz.files}
    tree = entries["tree"].tobytes()
    assert text in tree
    entries["tree"] = np.frombuffer(tree.replace(text, by), np.uint8)
    np.savez(path, **entries)


def array_edited(path: Path, change) -> None:
    """Replace the checkpoint's array of rewards by ``change`` of it, leaving its checksum as it was."""
    from banditbench.runner.checkpoint import read

    rewards = read(path)["columns"]["rewards"].tobytes()
    with np.load(path) as npz:
        entries = {name: npz[name] for name in npz.files}
    name = next(name for name, array in entries.items() if array.tobytes() == rewards)
    entries[name] = change(entries[name])
    np.savez(path, **entries)


def planted_tree(path: Path, text: bytes) -> None:
    """Replace the checkpoint by one whose JSON index is ``text`` and that holds no array, under a matching checksum."""
    from banditbench.runner.checkpoint import checksum

    np.savez(path, tree=np.frombuffer(text, np.uint8), sha256=np.frombuffer(checksum(text, {}).encode(), np.uint8))


def wrong_policy_shape(state):
    state["policy"]["stats"]["A_inv"] = np.ones((3, 3))  # does not fit the member's slice it is copied into


@pytest.mark.parametrize(
    "tamper, says",
    [
        (lambda p: edited_in_place(p, b'"t", 60', b'"t", 10'), "checksum does not match"),
        (lambda p: edited_in_place(p, b'"t", 60', b'"t", 199999'), "checksum does not match"),
        (lambda p: forged(p, lambda s: s.update(t=-5)), "round -5 is not a round between 1 and 99"),
        (lambda p: forged(p, lambda s: s.update(t=0)), "round 0 is not a round between 1 and 99"),
        (lambda p: forged(p, lambda s: s.update(t="x")), "round 'x' is not a round"),
        (lambda p: forged(p, lambda s: s.update(t=199_999)), "round 199999 is not a round"),
        (lambda p: forged(p, lambda s: s.update(t=True)), "round True is not a round"),
        (lambda p: forged(p, lambda s: s.update(t=100)), "round 100 is not a round between 1 and 99"),
        (lambda p: array_edited(p, lambda a: a + 1.0), "checksum does not match"),
        (lambda p: array_edited(p, lambda a: a.view(np.int64)), "checksum does not match"),  # the same bytes
        (lambda p: array_edited(p, lambda a: a.reshape(50, 2)), "checksum does not match"),  # the same bytes
        (lambda p: forged(p, lambda s: s["columns"].update(rewards=np.zeros(50))), "'rewards' has shape (50,)"),
        (lambda p: forged(p, lambda s: s["columns"].update(chosen_arms=np.zeros(100))), "is float64[100], not int64"),
        (lambda p: forged(p, lambda s: s["columns"].pop("users")), "are not the unit's"),
        (
            lambda p: forged(p, lambda s: s.update(unit=s["unit"].replace('"seed_index": 1', '"seed_index": 2'))),
            "belongs to another run",
        ),
        (lambda p: forged(p, lambda s: s["diagnostics"].update(clusters=np.zeros(50))), "'clusters' has shape (50,)"),
        (lambda p: forged(p, lambda s: s.update(wall_seconds="x")), "wall time 'x'"),
        (lambda p: forged(p, lambda s: s.update(wall_seconds=-1.0)), "wall time -1.0"),
        (lambda p: planted_tree(p, b'{"tuple": 5}'), "'int' object is not iterable"),  # a foreign file's index
        (lambda p: forged(p, lambda s: s.update(torch_rng=np.zeros(4))), "torch RNG state is not a byte array"),
        (lambda p: forged(p, wrong_policy_shape), "does not fit linucb-ind"),
    ],
    ids=[
        "t-edited-10",
        "t-edited-199999",
        "t-minus-5",
        "t-zero",
        "t-string",
        "t-too-large",
        "t-bool",
        "t-last-round",
        "array-edited",
        "array-retyped",
        "array-reshaped",
        "column-short",
        "column-dtype",
        "column-missing",
        "another-run",
        "diagnostics-short",
        "wall-time",
        "wall-negative",
        "foreign-index",
        "torch-rng",
        "policy-array-shape",
    ],
)
def test_an_unusable_checkpoint_is_discarded_with_one_warning_and_the_unit_restarts(
    tamper, says, dataset, tmp_path, capsys
):
    from test_checkpoints import EVERY, table_bytes

    from banditbench.runner.checkpoint import Checkpoints
    from banditbench.runner.unit import run_unit

    unit, path = checkpointed(dataset, tmp_path)
    tamper(path)
    capsys.readouterr()
    resumed = run_unit(unit, dataset, checkpoints=Checkpoints(tmp_path, EVERY))
    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: checkpoint {path} is unusable"), warnings
    assert says in warnings[0] and warnings[0].endswith("restarts from round 0")
    assert table_bytes(resumed.outcome) == table_bytes(run_unit(unit, dataset).outcome)


def test_an_unusable_checkpoint_is_deleted_as_it_is_discarded(dataset, tmp_path, capsys):
    # so that a unit killed again before its next checkpoint does not meet it, and warn, once more
    from test_checkpoints import EVERY

    from banditbench.runner.checkpoint import Checkpoints

    unit, path = checkpointed(dataset, tmp_path)
    edited_in_place(path, b'"t", 60', b'"t", 10')
    assert Checkpoints(tmp_path, EVERY).load(unit) is None
    assert not path.exists()


def test_run_resume_with_a_checkpoint_edited_to_another_round_gives_the_uninterrupted_shard(data_dir, tmp_path, capsys):
    args = ("run", "--data-dir", data_dir, "--algos", "linucb-ind", "--rounds", 300, "--seeds", 1, "--jobs", 1)
    assert main(*args, "--out", tmp_path / "clean", capsys=capsys)[0] == 0
    out = tmp_path / "out"
    assert main(*args, "--checkpoint-every", 100, "--out", out, capsys=capsys)[0] == 0
    shard = out / "shards" / "linucb-ind-seed0.parquet"
    shard.unlink()  # as if the run had been killed after its checkpoint at round 200
    from banditbench.runner.checkpoint import Checkpoints

    experiment = plan(RunSettings.with_defaults(**{**SETTINGS, "algos": ["linucb-ind"], "seeds": 1}), data_dir=data_dir)
    from test_checkpoints import CrashingCheckpoints, Interrupted

    from banditbench.runner.unit import run_unit

    with pytest.raises(Interrupted):
        run_unit(experiment.units[0], experiment.dataset, checkpoints=CrashingCheckpoints(out, 100))
    edited_in_place(Checkpoints(out, 100).path(experiment.units[0]), b'"t", 200', b'"t", 10')
    code, err = main(*args, "--checkpoint-every", 100, "--out", out, "--resume", capsys=capsys)
    assert code == 0 and "checksum does not match" in err and "restarts from round 0" in err
    assert shard.read_bytes() == (tmp_path / "clean" / "shards" / "linucb-ind-seed0.parquet").read_bytes()
