"""A trusted tool: it never loses a user's file, never reports a broken run as a result, and stops cleanly.

Each test names the guarantee of docs/reliability.md it checks.
"""

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pyarrow.parquet as pq
import pytest

from banditbench import cli
from banditbench.errors import UserError
from banditbench.runner.experiment import execute, plan, prepare_output
from banditbench.runner.settings import RunSettings
from banditbench.runner.unit import run_unit

SETTINGS = dict(
    dataset="synthetic", algos=["random", "linucb-ind"], rounds=300, seeds=2, seed=0, budget=None, params=[]
)


def run(data_dir, out, *, overwrite=False, resume=False, **settings):
    experiment = plan(RunSettings.with_defaults(**{**SETTINGS, **settings}), data_dir=data_dir)
    return execute(experiment, prepare_output(out, experiment, overwrite=overwrite, resume=resume), out)


def shards(folder):
    return {
        p.name: p.read_bytes()
        for p in sorted((Path(folder) / "shards").glob("*.parquet"))
        if not p.name.endswith(".timing.parquet")
    }


def tree(folder):
    """Every path under ``folder`` with its size: what "the filesystem is unchanged" compares."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size if p.is_file() else None) for p in sorted(Path(folder).rglob("*"))
    }


def main(*args, capsys):
    """`banditbench ARGS` in this process: its exit code and its stderr."""
    with mock.patch.object(sys, "argv", ["banditbench", *map(str, args)]):
        try:
            cli.main()
            code = 0
        except SystemExit as e:
            code = e.code
    return code, capsys.readouterr().err


def command(*args, **options):
    return subprocess.Popen(
        [sys.executable, "-m", "banditbench", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **options,
    )


def session_processes(session: int) -> list[int]:
    """Processes still alive in a session (the started command and every child it made)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[3]) == session and fields[0] != "Z":  # fields: state, ppid, pgrp, session
                alive.append(int(entry.name))
    return alive


def wait_for(condition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


# ---- the output folder ---------------------------------------------------------------------------------------
def test_overwrite_and_resume_never_touch_a_folder_without_results(data_dir, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "precious.txt").write_text("years of work")
    for flags in ({"overwrite": True}, {"resume": True}):
        with pytest.raises(UserError, match="no banditbench results"):
            run(data_dir, mine, **flags)
    assert tree(mine) == {"precious.txt": 13} and sorted(p.name for p in tmp_path.iterdir()) == ["datasets", "mine"]


def test_out_that_is_empty_the_current_folder_or_above_it_is_refused(data_dir, tmp_path, monkeypatch):
    work = tmp_path / "work" / "here"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    before = tree(tmp_path)
    for out in ("", ".", "..", str(tmp_path), str(data_dir)):
        experiment = plan(RunSettings.with_defaults(**SETTINGS), data_dir=data_dir)
        with pytest.raises(UserError, match="^out "):
            prepare_output(Path(out), experiment, overwrite=True, resume=False, data_dir=data_dir)
    assert tree(tmp_path) == before  # no staging folder left behind


def test_out_below_a_file_blames_the_file(data_dir, tmp_path):
    (tmp_path / "notes").write_text("x")
    with pytest.raises(UserError, match=f"{tmp_path / 'notes'} is a file"):
        run(data_dir, tmp_path / "notes" / "sub")


def test_a_second_run_into_the_same_folder_is_refused_while_the_first_holds_it(data_dir, tmp_path):
    experiment = plan(RunSettings.with_defaults(**SETTINGS), data_dir=data_dir)
    first = prepare_output(tmp_path / "out", experiment, overwrite=False, resume=False)
    with pytest.raises(UserError, match="another banditbench run is writing"):
        prepare_output(tmp_path / "out", experiment, overwrite=False, resume=True)
    execute(experiment, first, tmp_path / "out")  # releases the lock when done
    run(data_dir, tmp_path / "out", resume=True)


def test_a_folder_killed_before_its_manifest_was_renamed_resumes(data_dir, tmp_path):
    out = tmp_path / "a"
    out.mkdir()
    (out / ".lock").write_text("")
    (out / ".manifest.json.partial").write_text('{"conf')  # a run killed while writing its manifest
    run(data_dir, out, resume=True)
    run(data_dir, tmp_path / "b")
    assert shards(out) == shards(tmp_path / "b") and not list(out.glob("*.partial"))


# ---- broken shards -------------------------------------------------------------------------------------------
def test_a_truncated_shard_is_run_again_on_resume(data_dir, tmp_path):
    run(data_dir, tmp_path / "a")
    before = shards(tmp_path / "a")
    path = tmp_path / "a" / "shards" / "linucb-ind-seed1.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    ran = run(data_dir, tmp_path / "a", resume=True)
    assert [u.id for u in ran] == ["linucb-ind-seed1"] and shards(tmp_path / "a") == before


def test_report_verifies_every_shard_before_writing_any_file(data_dir, tmp_path, capsys):
    run(data_dir, tmp_path / "a")
    path = tmp_path / "a" / "shards" / "random-seed0.parquet"
    path.write_bytes(path.read_bytes()[:-100])
    before = tree(tmp_path / "a")
    code, err = main("report", tmp_path / "a", "--format", "md,csv", capsys=capsys)
    assert code == 2 and "random-seed0.parquet: its bytes do not match its checksum record" in err
    assert "nothing was written" in err
    assert tree(tmp_path / "a") == before


def test_a_report_on_fewer_seeds_than_planned_says_so_everywhere(data_dir, tmp_path, capsys):
    run(data_dir, tmp_path / "a")
    (tmp_path / "a" / "shards" / "linucb-ind-seed1.parquet").unlink()
    code, err = main("report", tmp_path / "a", "--format", "md,csv", capsys=capsys)
    assert code == 0 and "incomplete: 3 of 4 planned units" in err
    assert (tmp_path / "a" / "report.md").read_text().startswith("> **incomplete: 3 of 4")
    assert "3 of 4 planned units" in (tmp_path / "a" / "INCOMPLETE.txt").read_text()
    run(data_dir, tmp_path / "a", resume=True)
    main("report", tmp_path / "a", "--format", "md,csv", capsys=capsys)
    assert not (tmp_path / "a" / "INCOMPLETE.txt").exists()
    assert not (tmp_path / "a" / "report.md").read_text().startswith("> **incomplete")


# ---- values that make results meaningless ---------------------------------------------------------------------
def test_a_non_finite_expected_reward_fails_the_unit_with_its_round_and_algorithm(data_dir, dataset):
    from banditbench.envs import PROTOCOLS

    environment = PROTOCOLS["linear"].environment
    blocks = environment.blocks  # its rounds, one by one or a block at a time

    def poisoned(self, T):
        for block in blocks(self, T):
            if block.t <= 7 < block.t + len(block):
                block.expected[7 - block.t] = np.nan
            yield block

    unit = plan(RunSettings.with_defaults(**SETTINGS), data_dir=data_dir).units[2]  # linucb-ind, seed 0
    with (
        mock.patch.object(environment, "blocks", poisoned),
        pytest.raises(UserError, match="linucb-ind produced a non-finite expected_reward .* at round 7"),
    ):
        run_unit(unit, dataset)


def test_sizes_beyond_the_limits_are_refused_before_anything_is_written(data_dir, tmp_path, capsys):
    for flag, value in (
        ("--rounds", "100000000000000000000"),
        ("--seeds", "1000000000"),
        ("--jobs", "100000"),
        ("--rounds", "100000000000"),
    ):
        code, err = main(
            "run", "--data-dir", data_dir, "--algos", "random", flag, value, "--out", tmp_path / "x", capsys=capsys
        )
        assert code == 2 and ("limit" in err or "GiB" in err), err
        assert len(err.strip().splitlines()) == 1 and not (tmp_path / "x").exists()


def test_units_whose_statistics_fit_but_not_beside_their_columns_are_refused(data_dir, monkeypatch):
    from banditbench.runner import experiment

    planned = plan(
        RunSettings.with_defaults(**{**SETTINGS, "algos": ["linucb-ind"], "rounds": 1000}), data_dir=data_dir
    )
    columns = experiment.BYTES_PER_ROUND * 1000 * 2  # two units at once
    planned.state_bytes["linucb-ind"] = columns  # each unit's statistics as large as both units' columns
    monkeypatch.setattr(experiment, "physical_memory", lambda: 2 * columns + columns // 2)  # the statistics fit alone
    with pytest.raises(UserError, match="jobs 2 runs 2 units at once, whose statistics need about"):
        experiment.check_sizes(planned, jobs=2)


def test_every_rejectable_run_and_report_input_leaves_the_filesystem_unchanged(data_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run(data_dir, tmp_path / "done")
    (tmp_path / "bad.toml").write_text("rounds = [")
    (tmp_path / "latin1.toml").write_bytes("rounds = 50  # café\n".encode("latin-1"))
    (tmp_path / "file").write_text("x")
    base = ("run", "--data-dir", data_dir, "--rounds", "50", "--seeds", "1")
    rejected = [
        (*base, "--algos", "linucb-in"),
        (*base, "--algos", ""),
        (*base, "--algos", "random,random"),
        (*base, "--dataset", "nosuch"),
        (*base, "--dataset", "movielens-100k"),
        (*base, "--rounds", "0"),
        (*base, "--seeds", "-1"),
        (*base, "--tune-seeds", "-1"),
        (*base, "--seed", "-1"),
        (*base, "--budget", "x"),
        (*base, "--budget", "0"),
        (*base, "--set", "linucb-ind.alpha=x"),
        (*base, "--set", "club.alpha=1"),
        (*base, "--set", "random.nosuch=1"),
        (*base, "--set", "nodot"),
        (*base, "--env", "nosuch=1"),
        (*base, "--config", "bad.toml"),
        (*base, "--config", "missing.toml"),
        (*base, "--config", "latin1.toml"),
        (*base, "--set", "linucb-ind.alpha=1", "--set", "linucb-ind.alpha=2"),
        (*base, "--env", "users=1", "--env", "users=2"),
        (*base, "--dataset", "../datasets/synthetic"),
        (*base, "--dataset", str(data_dir / "synthetic")),
        (*base, "--out", data_dir / "inside"),
        (*base, "--preset", "nosuch"),
        (*base, "--jobs", "0"),
        (*base, "--backend", "nosuch"),
        (*base, "--checkpoint-every", "-1"),
        (*base, "--device", "tpu"),
        (*base, "--out", "file/sub"),
        (*base, "--out", "."),
        (*base, "--out", ""),
        (*base, "--out", "done"),
        (*base, "--out", "done", "--overwrite", "--resume"),
        (*base, "--out", "done", "--resume"),  # other settings than the folder's
        ("run", "--data-dir", tmp_path / "nodata", "--out", "x"),
        ("report", "done", "--format", "nosuch"),
        ("report", "done", "--test", "nosuch"),
        ("report", "done", "--tolerance", "x"),
        ("report", "done", "--proposed", "nosuch"),
        ("report", "done", "--baselines", "linucb-in"),
        ("report", "nosuch"),
        ("report", "file"),
        ("report", "done", "--check", "missing.json"),
        ("report", "done", "done"),
        ("report", "done", "--out", data_dir),
    ]
    before = tree(tmp_path)
    for args in rejected:
        code, err = main(*args, capsys=capsys)
        assert code == 2 and "Traceback" not in err, (args, err)
        assert tree(tmp_path) == before, args


@pytest.mark.parametrize(
    "args, says",
    [
        (("--set", "random.x=1", "--set", "random.x=2"), "--set random.x is given twice (1 and 2)"),
        (("--env", "users=1", "--env", "users=2"), "--env users is given twice (1 and 2)"),
        (("--config", "latin1.toml"), "is not UTF-8 text (byte 18 is 0xe9)"),
    ],
    ids=["set-twice", "env-twice", "config-not-utf8"],
)
def test_a_value_given_twice_or_a_config_file_not_in_utf8_is_one_line(
    args, says, data_dir, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "latin1.toml").write_bytes("rounds = 50  # café\n".encode("latin-1"))
    code, err = main("run", "--data-dir", data_dir, *args, capsys=capsys)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_a_setting_refused_by_its_policy_leaves_nothing_and_the_corrected_command_runs(data_dir, tmp_path, capsys):
    args = ("run", "--data-dir", data_dir, "--algos", "bass", "--rounds", "30", "--seeds", "1")
    code, err = main(*args, "--set", "bass.radius_convention=foo", "--out", tmp_path / "x", capsys=capsys)
    assert code == 2 and "radius_convention" in err and not (tmp_path / "x").exists()
    code, err = main(*args, "--set", "bass.radius_convention=bandpy", "--out", tmp_path / "x", capsys=capsys)
    assert code == 0, err
    assert len(shards(tmp_path / "x")) == 1


def test_a_typo_in_algos_suggests_the_near_name(data_dir):
    with pytest.raises(UserError, match="did you mean linucb-ind"):
        plan(RunSettings.with_defaults(**{**SETTINGS, "algos": ["linucb-idn"]}), data_dir=data_dir)


def test_report_names_an_unknown_proposed_or_baseline_algorithm(data_dir, tmp_path, capsys):
    run(data_dir, tmp_path / "a")
    code, err = main("report", tmp_path / "a", "--proposed", "nosuch", capsys=capsys)
    assert code == 2 and "--proposed nosuch" in err
    code, err = main("report", tmp_path / "a", "--baselines", "linucb-idn", capsys=capsys)
    assert code == 2 and "did you mean linucb-ind" in err


# ---- full disks ----------------------------------------------------------------------------------------------
def small_run(data_dir, out) -> tuple:
    """The two-algorithm, two-seed run that the full-disk test interrupts and then resumes."""
    return (
        "run",
        "--data-dir",
        data_dir,
        "--algos",
        "random,linucb-ind",
        "--rounds",
        "300",
        "--seeds",
        "2",
        "--seed",
        "0",
        "--jobs",
        "1",
        "--out",
        out,
    )


def test_a_full_disk_during_a_run_is_one_line_leaves_no_partial_file_and_resumes(data_dir, tmp_path, capsys):
    from banditbench.results import shards as module

    run(data_dir, tmp_path / "clean")
    real, calls = pq.write_table, []

    def fill_up(table, where, *args, **kwargs):
        calls.append(where)
        if len(calls) > 3:  # the first unit's two files fit, the second's outcome shard does not
            Path(where).write_bytes(b"PAR1 half")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(table, where, *args, **kwargs)

    with mock.patch.object(module.pq, "write_table", fill_up):
        code, err = main(
            *small_run(data_dir, tmp_path / "a"),
            capsys=capsys,
        )
    assert code == 2 and len(err.strip().splitlines()) == 1 and f"{tmp_path / 'a'}" in err and "MB" in err, err
    assert not [p for p in (tmp_path / "a").rglob("*") if p.name.endswith(".partial")]
    assert len(shards(tmp_path / "a")) == 1
    code, err = main(
        *small_run(data_dir, tmp_path / "a"),
        "--resume",
        capsys=capsys,
    )
    assert code == 0, err
    assert shards(tmp_path / "a") == shards(tmp_path / "clean")


def test_a_full_disk_during_a_report_leaves_no_empty_file(data_dir, tmp_path, capsys):
    run(data_dir, tmp_path / "a")
    before = tree(tmp_path / "a")
    real = Path.write_text

    def fill_up(self, text, *args, **kwargs):
        if self.name == "comparisons.csv":
            real(self, "", *args, **kwargs)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, text, *args, **kwargs)

    with mock.patch.object(Path, "write_text", fill_up):
        code, err = main("report", tmp_path / "a", "--format", "md,csv", capsys=capsys)
    assert code == 2 and "no space left writing to" in err and "Traceback" not in err
    assert tree(tmp_path / "a") == before
    code, err = main("report", tmp_path / "a", "--format", "md,csv", capsys=capsys)
    assert code == 0 and (tmp_path / "a" / "comparisons.csv").stat().st_size > 0


# ---- signals and processes -----------------------------------------------------------------------------------
LONG = ("run", "--algos", "linucb-ind,random", "--rounds", "200000", "--seeds", "3", "--jobs", "2", "--seed", "0")


def test_ctrl_c_exits_130_names_the_progress_and_stops_the_workers(data_dir, tmp_path):
    out = tmp_path / "out"
    process = command(*LONG, "--data-dir", data_dir, "--out", out)
    wait_for(lambda: len(session_processes(process.pid)) >= 4)  # the run, the fork server, its workers
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C does: the whole foreground group
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    # No unit of 200 000 rounds finished: the folder the run created is gone, so there is nothing to resume.
    assert (
        err.strip().splitlines()[-1] == "interrupted: no unit finished and nothing was written; run the command again"
    )
    assert "Traceback" not in err and not out.exists()
    wait_for(lambda: session_processes(process.pid) == [], timeout=15)  # the workers stop by themselves


def test_ctrl_c_names_the_units_done_and_the_command_that_resumes(data_dir, tmp_path, monkeypatch):
    from banditbench.errors import Interrupted

    run(data_dir, tmp_path / "a")
    (tmp_path / "a" / "shards" / "random-seed1.parquet").unlink()
    units = plan(RunSettings.with_defaults(**SETTINGS), data_dir=data_dir).units
    monkeypatch.setattr(sys, "argv", ["banditbench", "run", "--rounds", "300", "--out", str(tmp_path / "a")])
    line = cli.interrupted(Interrupted(units, tmp_path / "a", staged=False))
    assert (
        line
        == f"interrupted: 3 of 4 units done; resume with: banditbench run --rounds 300 --out {tmp_path / 'a'} --resume"
    )
    staged = cli.interrupted(Interrupted(units, tmp_path / "a", staged=True))
    assert staged.startswith("interrupted: nothing replaced, the old results in")


def test_a_ctrl_c_while_the_interpreter_exits_leaves_a_finished_commands_exit_code(tmp_path):
    # A module-level object deleted while Python tears its modules down, after it restored SIGINT's default
    # action: the last moment a Ctrl-C can land. It used to kill the finished command silently (-SIGINT).
    script = tmp_path / "late_ctrl_c.py"
    script.write_text(
        "import os, signal, sys\n"
        "from banditbench.cli import entry\n"
        "class CtrlCAtTeardown:\n"
        "    def __del__(self):\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "late = CtrlCAtTeardown()\n"
        "sys.argv = ['banditbench', 'list', 'presets']\n"
        "entry()\n"
    )
    finished = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, (finished.returncode, finished.stderr)


def test_a_ctrl_c_as_the_finished_command_returns_is_one_line_and_exit_130(tmp_path):
    # The moment after typer's command has returned, outside every handler of the command itself (seen in the
    # fault-injection test as a KeyboardInterrupt traceback from typer's __call__).
    script = tmp_path / "returning_ctrl_c.py"
    script.write_text(
        "import os, signal, sys\n"
        "from banditbench import cli\n"
        "command = cli.app\n"
        "def ctrl_c_on_return(*args, **kwargs):\n"
        "    code = command(*args, **kwargs)\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    return code\n"
        "cli.app = ctrl_c_on_return\n"
        "sys.argv = ['banditbench', 'list', 'presets']\n"
        "cli.entry()\n"
    )
    finished = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    assert finished.returncode == 130 and "Traceback" not in finished.stderr, (finished.returncode, finished.stderr)
    assert finished.stderr.strip().splitlines()[-1] == "interrupted"


@pytest.mark.parametrize("where", ["command", "start-up"])
def test_a_ctrl_c_inside_an_exec_of_a_string_still_exits_130(tmp_path, where):
    # A Ctrl-C landing while a dataclass builds its methods (an exec of a string), in a command or while the
    # command's modules import: seen in the fault-injection test as exit -SIGINT after "interrupted". Run with -m,
    # as `python -m banditbench` is: a script's SystemExit ends the process before CPython looks at its mark.
    script = tmp_path / "exec_ctrl_c.py"
    if where == "command":
        body = "from banditbench import cli\ncli.main = lambda: exec('raise KeyboardInterrupt')\ncli.entry()\n"
    else:
        body = (
            "import runpy, sys\n"
            "class CtrlCWhileTheCommandImports:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'banditbench.cli':\n"
            "            exec('raise KeyboardInterrupt')\n"
            "sys.meta_path.insert(0, CtrlCWhileTheCommandImports())\n"
            "runpy.run_module('banditbench', run_name='__main__')\n"
        )
    script.write_text(body)
    finished = subprocess.run(
        [sys.executable, "-m", script.stem], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert finished.returncode == 130 and "Traceback" not in finished.stderr, (finished.returncode, finished.stderr)
    assert finished.stderr.splitlines()[-1:] == ["interrupted"]


def test_kill_9_leaves_no_worker_fork_server_or_resource_tracker(data_dir, tmp_path):
    process = command(*LONG, "--data-dir", data_dir, "--out", tmp_path / "out")
    wait_for(lambda: len(session_processes(process.pid)) >= 5)  # the run, tracker, fork server, 2 workers
    process.kill()
    process.communicate()
    wait_for(lambda: session_processes(process.pid) == [], timeout=10)


SERVER_THAT_ENDS = """
import os, time
import banditbench.worker_signals  # this process plays a pool's fork server
started, ready = os.pipe()
if os.fork() == 0:  # a worker still starting, before the pool's initializer has run
    if os.fork() == 0:  # a process the worker forks is the worker's own, not bound to the server
        os._exit(7)
    print("helper", os.waitstatus_to_exitcode(os.wait()[1]), flush=True)
    os.write(ready, b"!")
    time.sleep(600)
os.read(started, 1)
os._exit(0)
"""


def test_a_fork_servers_worker_ends_with_the_server_from_its_first_instruction():
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER_THAT_ENDS], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    out, _ = server.communicate(timeout=60)  # the pipe closes when the worker, which holds it, has ended
    assert out.split() == ["helper", "7"]
    wait_for(lambda: session_processes(server.pid) == [], timeout=10)


def test_a_closed_stdout_pipe_ends_the_report_quietly(data_dir, tmp_path):
    run(data_dir, tmp_path / "a")
    process = command("report", tmp_path / "a", "--format", "none")
    process.stdout.close()  # the reader is gone before the first line, as `| head -0` would be
    _, err = process.communicate(timeout=60)
    assert process.returncode in (0, 141) and err == ""
