"""The round loop (docs/architecture.md, "Unit of work"), for one-arm and slate rounds alike, of a group of units
(runner/engines.py) taking each round together, one policy object holding every member; a unit is a group of one.

What differs between them (the environment's construction, the policy's view, the feedback, the recorded
columns) is a round kind: :class:`ArmRounds` here, ``SlateRounds`` in runner/slate.py, chosen by the protocol's
``slate`` flag. Where the rounds come from is a round source: :class:`EachRound` (one Round per member and round,
any kind) or :class:`BlockRounds` (one-arm rounds a block at a time, from environments that hand out blocks). The
loop itself times select and update, keeps the budget, samples diagnostics, reports progress and checkpoints the
same way for all."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from banditbench.algos import ALGORITHMS
from banditbench.algos.base import MemberPolicy, Policy
from banditbench.data import PreparedDataset
from banditbench.envs import PROTOCOLS, Budget
from banditbench.envs.round import Rounds, RoundViews
from banditbench.errors import UserError
from banditbench.results.units import Unit, UnitResult
from banditbench.runner.checkpoint import Checkpoints, restore_rng
from banditbench.runner.choices import BrokenChoice, BrokenContract, arm_index
from banditbench.runner.diagnostics import clustering_scores
from banditbench.runner.logged import LoggedRounds
from banditbench.runner.seeds import unit_streams
from banditbench.runner.slate import SlateRounds

PROGRESS_EVERY = 1000  # rounds between progress callbacks: keeps the hot loop free of UI work
DIAGNOSTICS_EVERY = 100  # rounds between samples of a policy's diagnostics (and the last round)


class ArmRounds:
    """A policy picks one arm of the round; its feedback is that arm's realised reward (docs/architecture.md,
    "Round")."""

    revealed = True  # every round's feedback reaches the policy (a log's skipped events do not: runner/logged.py)

    def __init__(self, unit: Unit, dataset: PreparedDataset, env_seed):
        environment = PROTOCOLS[unit.protocol].environment
        settings = (unit.env,) if hasattr(environment, "SETTINGS") else ()  # a protocol with settings is given them
        self.env = environment(dataset, env_seed, *settings)
        self.diagnosed = False

    def begin(self, policy) -> None:
        pass

    def new_columns(self, T: int) -> dict[str, np.ndarray]:
        return {
            **{name: np.empty(T, np.int64) for name in ("users", "groups", "chosen_arms")},
            **{name: np.empty(T) for name in ("rewards", "expected_rewards", "best_expected_rewards")},
        }

    def use(self, columns: dict[str, np.ndarray], policy) -> None:
        self.users, self.groups, self.chosen, self.rewards, self.expected, self.best = (
            columns[name]
            for name in ("users", "groups", "chosen_arms", "rewards", "expected_rewards", "best_expected_rewards")
        )
        self.privileged = policy.privileged  # the oracle sees the hidden expected rewards
        self.diagnosed = has_diagnostics(policy)

    def view(self, rnd, budget: Budget):
        return rnd if self.privileged else rnd.view(budget)

    def choice(self, selected, rnd):
        return arm_index(selected, len(rnd.arms))

    def feedback(self, rnd, chosen) -> float:
        return float(rnd.rewards[chosen])

    def record(self, t: int, rnd, chosen, reward: float) -> None:
        self.users[t] = rnd.user
        self.groups[t] = rnd.group
        self.chosen[t] = chosen
        self.rewards[t] = reward
        expected = rnd.expected.tolist()  # plain floats: cheaper than numpy calls on K values
        self.expected[t] = expected[chosen]
        self.best[t] = max(expected)

    def record_many(self, rows: slice, rounds: Rounds, chosen: np.ndarray, rewards: np.ndarray) -> None:
        """``record`` of the rounds ``rows`` at once: ``rounds`` holds them, ``chosen`` and ``rewards`` [rows]."""
        self.users[rows], self.groups[rows] = rounds.users, rounds.groups
        self.chosen[rows], self.rewards[rows] = chosen, rewards
        self.expected[rows] = np.take_along_axis(rounds.expected, chosen[:, None], axis=1)[:, 0]
        self.best[rows] = rounds.expected.max(axis=1)

    def outcome(self, T: int) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Any] | None]:
        """The outcome columns, those that must be finite, and the shard's extra metadata."""
        regret = self.best - self.expected  # max(expected) − expected[chosen] (docs/architecture.md, "Round")
        columns = {
            "user": self.users,
            "group": self.groups,
            "chosen": self.chosen,
            "reward": self.rewards,
            "expected_reward": self.expected,
            "best_expected_reward": self.best,
            "regret": regret,
        }
        finite = {
            "reward": self.rewards,
            "expected_reward": self.expected,
            "best_expected_reward": self.best,
            "regret": regret,
        }
        return columns, finite, None


def run_unit(
    unit: Unit,
    dataset: PreparedDataset,
    progress: Callable[[int], None] | None = None,
    checkpoints: Checkpoints | None = None,
) -> UnitResult:
    """Run one unit, one-arm or slate rounds alike; with ``checkpoints``, save its state every
    ``checkpoints.every`` rounds and continue from a saved state if there is one (runner/checkpoint.py)."""
    return run_group([unit], dataset, progress, checkpoints)[0]


class Lane:
    """One unit of a group, member ``m`` of the group's policy: its environment and round kind, and the columns it
    records."""

    def __init__(self, unit: Unit, dataset: PreparedDataset, m: int):
        env_seed, self.policy_seed = unit_streams(unit.master_seed, unit.seed_index, unit.tuning)
        self.unit, self.m = unit, m
        protocol = PROTOCOLS[unit.protocol]
        kind = SlateRounds if protocol.slate else LoggedRounds if protocol.logged else ArmRounds
        self.kind = kind(unit, dataset, env_seed)

    def start(self, policy, state: dict[str, Any] | None) -> None:
        """Fresh columns, or those of a checkpoint ``state`` (whose policy state is loaded as member m's)."""
        if state is None:
            self.columns = self.new_columns(policy)
            self.diagnostics: dict[str, np.ndarray] = {}
            self.wall_before = 0.0
        else:
            check_columns(state["columns"], self.new_columns(policy))
            try:
                policy.load_member_state_dict(self.m, state["policy"])
            except (AttributeError, IndexError, KeyError, RuntimeError, TypeError, ValueError) as e:
                raise UnusableCheckpoint(f"its policy state does not fit {self.unit.algorithm} ({e})") from None
            self.columns, self.diagnostics = state["columns"], state.get("diagnostics", {})
            self.wall_before = state["wall_seconds"]
        self.kind.use(self.columns, policy)
        self.budget_spent, self.select_seconds, self.update_seconds = (
            self.columns[name] for name in ("budget_spent", "select_seconds", "update_seconds")
        )
        self.timing_columns = policy.timing_columns
        self.components = {name: self.columns[f"{name}_seconds"] for name in policy.timing_columns}
        self.true_groups = getattr(self.kind.env, "true_groups", None)

    def new_columns(self, policy) -> dict[str, np.ndarray]:
        T = self.unit.rounds
        return {
            **self.kind.new_columns(T),
            "budget_spent": np.empty(T, np.int64),
            "select_seconds": np.empty(T),
            "update_seconds": np.empty(T),
            **{f"{name}_seconds": np.zeros(T) for name in policy.timing_columns},
        }

    def share_times(self, select: np.ndarray, update: np.ndarray, M: int, start: int, stop: int) -> None:
        """This unit's share of the group's select and update seconds of rounds [start, stop)."""
        np.divide(select[start:stop], M, out=self.select_seconds[start:stop])
        np.divide(update[start:stop], M, out=self.update_seconds[start:stop])

    def result(self, wall: float) -> UnitResult:
        T, columns = self.unit.rounds, self.columns
        outcome, finite, metadata = self.kind.outcome(T)
        check_finite(self.unit, finite)
        outcome = pa.table(
            {
                "t": np.arange(T, dtype=np.int64),
                **outcome,
                "budget_spent": self.budget_spent,
                **{f"diag_{name}": values for name, values in sorted(self.diagnostics.items())},
            }
        )
        timing = pa.table(
            {
                "t": outcome["t"],
                "select_seconds": self.select_seconds,
                "update_seconds": self.update_seconds,
                **{f"{name}_seconds": columns[f"{name}_seconds"] for name in self.timing_columns},
            }
        )
        return UnitResult(outcome, timing, self.wall_before + wall, metadata=metadata)


class UnitPolicies:
    """The members of a group whose policy is written for one unit (``Policy``: plug-ins, slates, the random policy,
    the oracle), one policy object per member, behind the member contract of ``MemberPolicy``: each member's policy
    takes its own view of the round, one after the other."""

    def __init__(self, policies: list[Policy]):
        self.policies = policies
        first = type(policies[0])
        self.privileged, self.timing_columns = first.privileged, first.timing_columns

    def select(self, views, budgets: list[Budget]) -> list:
        return [policy.select(view, budget) for policy, view, budget in zip(self.policies, views, budgets)]

    def update(self, views, chosen: list, rewards: list) -> None:
        for policy, view, arm, reward in zip(self.policies, views, chosen, rewards):
            policy.update(view, arm, reward)

    @property
    def last_timings(self) -> dict[str, list[float]]:
        return {name: [policy.last_timings[name] for policy in self.policies] for name in self.timing_columns}

    def clusters(self, m: int):
        return self.policies[m].clusters()

    def sharing_graph(self, m: int):
        return self.policies[m].sharing_graph()

    def diagnostics(self, m: int) -> dict[str, float]:
        return self.policies[m].diagnostics()

    def member_state_dict(self, m: int) -> dict[str, Any]:
        return self.policies[m].state_dict()

    def load_member_state_dict(self, m: int, state: dict[str, Any]) -> None:
        self.policies[m].load_state_dict(state)


def group_of_one(policy: Policy | MemberPolicy) -> MemberPolicy | UnitPolicies:
    """One unit's policy behind the member contract, for code that steps a policy outside a run: a ``MemberPolicy``
    (of one member) as it is, a ``Policy`` written for one unit behind ``UnitPolicies``."""
    return policy if isinstance(policy, MemberPolicy) else UnitPolicies([policy])


def build_group(lanes: list[Lane]) -> MemberPolicy | UnitPolicies:
    """The policy of a group's members, each built from its unit's seed and hyper-parameters: one ``MemberPolicy``,
    or one ``Policy`` per member behind ``UnitPolicies``."""
    spec, env = ALGORITHMS[lanes[0].unit.algorithm], lanes[0].kind.env
    problem = {"n_users": env.n_users, "n_arms": env.n_arms, "dim": env.dim}
    if spec.takes_members:
        policy = spec.build_members(
            **problem, seeds=[lane.policy_seed for lane in lanes], params=[lane.unit.params for lane in lanes]
        )
        lanes[0].kind.begin(policy)  # the protocol's problem is every member's
        return policy
    policies = []
    for lane in lanes:
        policies.append(spec.build(**problem, seed=lane.policy_seed, params=lane.unit.params))
        lane.kind.begin(policies[-1])
    return UnitPolicies(policies)


class UnusableCheckpoint(Exception):
    """A checkpoint whose columns or policy state do not fit its unit."""


def check_columns(saved: dict[str, np.ndarray], fresh: dict[str, np.ndarray]) -> None:
    """A checkpoint's columns are the unit's, each with the fresh column's shape and dtype."""
    if set(saved) != set(fresh):
        raise UnusableCheckpoint(f"its columns {sorted(saved)} are not the unit's {sorted(fresh)}")
    for name, column in fresh.items():
        if saved[name].shape != column.shape or saved[name].dtype != column.dtype:
            raise UnusableCheckpoint(
                f"its column {name!r} is {saved[name].dtype}{list(saved[name].shape)}, "
                f"not {column.dtype}{list(column.shape)}"
            )


def start_lanes(
    units: list[Unit], dataset: PreparedDataset, checkpoints: Checkpoints | None
) -> tuple[list[Lane], MemberPolicy | UnitPolicies, int]:
    """A group's lanes and policy, started from their checkpoints when every member has a usable one at the same
    round (otherwise from round 0, every unusable checkpoint discarded with its warning); the round they start at."""
    lanes = [Lane(unit, dataset, m) for m, unit in enumerate(units)]
    group = build_group(lanes)
    states = [None] * len(lanes)
    if checkpoints is not None:
        states = [checkpoints.load(lane.unit) for lane in lanes]  # after the build: torch's RNG
        if len({None if state is None else state["t"] for state in states}) != 1:
            states = [None] * len(lanes)
    try:
        for lane, state in zip(lanes, states):
            lane.start(group, state)
    except UnusableCheckpoint as e:
        checkpoints.discard(lane.unit, str(e))
        return start_lanes(units, dataset, None)  # the policy as built, from round 0
    if states[0] is None:
        return lanes, group, 0
    restore_rng(states[0])
    return lanes, group, states[0]["t"]


class EachRound:
    """A group's rounds from every member's ``env.rounds``, one Round object per member and round: any round kind."""

    def __init__(self, lanes: list[Lane], T: int, start: int):
        self.lanes, self.kinds = lanes, [lane.kind for lane in lanes]
        # A resumed unit replays the environment's stream up to its checkpoint (rounds never depend on choices).
        self.streams = zip(*(itertools.islice(kind.env.rounds(T), start, None) for kind in self.kinds))

    def __iter__(self) -> Iterator[int]:
        for rounds in self.streams:
            self.rounds = rounds
            yield rounds[0].t

    def views(self, limit: int | None) -> tuple[list[Budget], list]:
        """Every member's budget for this round and its view of the round."""
        budgets, views = [], []
        for kind, rnd in zip(self.kinds, self.rounds):
            budget = Budget(limit)
            budgets.append(budget)
            views.append(kind.view(rnd, budget))
        return budgets, views

    def feedback(self, selected: list, budgets: list[Budget]) -> tuple[list, list]:
        """Close the budgets; the members' choices (as their round kind checks them) and what each observes."""
        chosen, observed = [], []
        for kind, rnd, budget, arm in zip(self.kinds, self.rounds, budgets, selected):
            budget.close()
            arm = kind.choice(arm, rnd)
            chosen.append(arm)
            observed.append(kind.feedback(rnd, arm))
        return chosen, observed

    def record(self, t: int, chosen: list, observed: list, budgets: list[Budget]) -> None:
        for lane, rnd, budget, arm, reward in zip(self.lanes, self.rounds, budgets, chosen, observed):
            lane.kind.record(t, rnd, arm, reward)
            lane.budget_spent[t] = budget.spent

    def revealed(self) -> bool:
        """Whether this round's feedback reaches the policies: always, but on a log's skipped events (a logged unit
        runs alone, runner/engines.py)."""
        return all(kind.revealed for kind in self.kinds)

    def flush(self) -> None:
        """Every round so far is in the columns already."""


class BlockRounds:
    """One-arm rounds of members whose environments hand out blocks of rounds (``env.blocks``): the group reads each
    member's block as arrays, takes every member's reward with one index and writes the columns a block at a time
    (``flush``), instead of building, viewing and recording a Round per member and round."""

    def __init__(self, lanes: list[Lane], T: int, start: int):
        self.lanes, self.members = lanes, np.arange(len(lanes))
        self.blocks = zip(*(blocks_from(lane.kind.env, T, start) for lane in lanes))

    def __iter__(self) -> Iterator[int]:
        for blocks in self.blocks:
            self.current, size = blocks, len(blocks[0])
            self.rewards = np.stack([block.rewards for block in blocks])  # [S, B, K]
            self.users = np.stack([block.users for block in blocks]).T.tolist()  # [B][S]: round i's users
            self.chosen = np.empty((len(blocks), size), np.int64)
            self.observed = np.empty((len(blocks), size))
            self.spent = np.empty((len(blocks), size), np.int64)
            self.done = 0  # rounds of the block written to the columns
            for i in range(size):
                self.i = i
                yield blocks[0].t + i
            self.flush()

    def views(self, limit: int | None) -> tuple[list[Budget], RoundViews]:
        budgets = [Budget(limit) for _ in self.lanes]
        return budgets, RoundViews(self.current[0].t + self.i, self.users[self.i], self.current, self.i, budgets)

    def feedback(self, selected: list, budgets: list[Budget]) -> tuple[list, list]:
        for budget in budgets:
            budget.close()
        return selected, self.rewards[self.members, self.i, selected].tolist()

    def revealed(self) -> bool:
        return True

    def record(self, t: int, chosen: list, observed: list, budgets: list[Budget]) -> None:
        i = self.i
        self.chosen[:, i], self.observed[:, i] = chosen, observed
        self.spent[:, i] = [budget.spent for budget in budgets]

    def flush(self) -> None:
        """Write the rounds of the block played since the last flush into the members' columns."""
        start, stop = self.done, self.i + 1
        if start == stop:
            return
        for s, (lane, block) in enumerate(zip(self.lanes, self.current)):
            rows = slice(block.t + start, block.t + stop)
            played = block.part(start, stop)
            lane.kind.record_many(rows, played, self.chosen[s, start:stop], self.observed[s, start:stop])
            lane.budget_spent[rows] = self.spent[s, start:stop]
        self.done = stop


def blocks_from(env, T: int, start: int) -> Iterator[Rounds]:
    """``env.blocks(T)`` from round ``start`` on (a resumed unit replays the stream up to its checkpoint)."""
    for block in env.blocks(T):
        if block.t + len(block) > start:
            yield block.part(start - block.t) if block.t < start else block


def in_blocks(lanes: list[Lane]) -> bool:
    """Whether a group takes its rounds a block at a time (``BlockRounds``): several members, one-arm rounds from
    environments that hand out blocks, and no policy that sees the hidden fields (the oracle reads the Round itself).
    A unit alone gains nothing from it: its array writes per round cost more than its one Round."""
    return len(lanes) > 1 and all(
        type(lane.kind) is ArmRounds and getattr(lane.kind.env, "blocks", None) and not lane.kind.privileged
        for lane in lanes
    )


def run_group(
    units: list[Unit],
    dataset: PreparedDataset,
    progress: Callable[[int], None] | None = None,
    checkpoints: Checkpoints | None = None,
) -> list[UnitResult]:
    """Run a group's units together (runner/engines.py), round t of every unit before round t + 1 of any; a group of
    one is a unit run alone. One policy object holds every member (``build_group``); every unit keeps its own
    environment, columns and checkpoints. Select and update times are the group's, divided equally among its units."""
    lanes, group, start = start_lanes(units, dataset, checkpoints)
    if not start:
        return play(lanes, group, 0, progress, checkpoints)
    try:
        return play(lanes, group, start, progress, checkpoints)
    except Exception as e:  # a policy state that loaded but breaks the policy (a planted wrong-shaped array)
        reason = f"the unit failed after resuming from it: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        for unit in units:
            checkpoints.discard(unit, reason)
        lanes, group, _ = start_lanes(units, dataset, None)
        return play(lanes, group, 0, progress, checkpoints)  # a failure of the policy itself fails again, from round 0


def play(
    lanes: list[Lane],
    group: MemberPolicy | UnitPolicies,
    start: int,
    progress: Callable[[int], None] | None,
    checkpoints: Checkpoints | None,
) -> list[UnitResult]:
    """The round loop of started lanes, from round ``start`` to the end; their results."""
    units = [lane.unit for lane in lanes]
    M, T = len(lanes), units[0].rounds
    if progress is not None and start:
        progress(M * (start - start % PROGRESS_EVERY))  # the loop reports the rest of this block
    limit = units[0].budget
    diagnosed = [lane for lane in lanes if lane.kind.diagnosed]
    checkpoint_every = checkpoints.every if checkpoints is not None else 0
    clock = time.perf_counter
    started = clock()
    rounds = (BlockRounds if in_blocks(lanes) else EachRound)(lanes, T, start)
    # the group's select and update seconds, shared equally by its units (copied into their columns when saved)
    select_seconds, update_seconds = lanes[0].select_seconds.copy(), lanes[0].update_seconds.copy()
    components = [(seconds, lane.m, name) for lane in lanes for name, seconds in lane.components.items()]
    for t in rounds:
        budgets, views = rounds.views(limit)
        t0 = clock()
        selected = group.select(views, budgets)
        t1 = clock()
        try:
            chosen, observed = rounds.feedback(selected, budgets)
        except BrokenChoice as e:
            raise BrokenContract(units[0].algorithm, t, str(e)) from None
        if rounds.revealed():  # a log's skipped event teaches the policy nothing (runner/logged.py)
            group.update(views, chosen, observed)
        update_seconds[t] = clock() - t1
        select_seconds[t] = t1 - t0
        if components:
            timings = group.last_timings
            for seconds, m, name in components:
                seconds[t] = timings[name][m]
        rounds.record(t, chosen, observed, budgets)
        if diagnosed and ((t + 1) % DIAGNOSTICS_EVERY == 0 or t == T - 1):
            for lane in diagnosed:
                for name, value in sample_diagnostics(group, lane.m, lane.true_groups).items():
                    lane.diagnostics.setdefault(name, np.full(T, np.nan))[t] = value
        if progress is not None and (t + 1) % PROGRESS_EVERY == 0:
            progress(M * PROGRESS_EVERY)
        if checkpoint_every and (t + 1) % checkpoint_every == 0 and t + 1 < T:
            rounds.flush()
            wall = clock() - started
            for lane in lanes:
                lane.share_times(select_seconds, update_seconds, M, start, t + 1)
                state = {
                    "t": t + 1,
                    "policy": group.member_state_dict(lane.m),
                    "columns": lane.columns,
                    "diagnostics": lane.diagnostics,
                    "wall_seconds": lane.wall_before + wall,
                }
                checkpoints.save(lane.unit, state)
    for lane in lanes:
        lane.share_times(select_seconds, update_seconds, M, start, T)
    wall = clock() - started
    if progress is not None:
        progress(M * (T % PROGRESS_EVERY))
    return [lane.result(wall) for lane in lanes]


def check_finite(unit: Unit, columns: dict[str, np.ndarray]) -> None:
    """A NaN or infinite reward, expected reward or regret makes every number of the unit meaningless:
    fail with the first such round, checked once per unit on whole columns (off the round loop)."""
    for name, values in columns.items():
        bad = ~np.isfinite(values)
        if bad.any():
            t = int(np.argmax(bad))
            raise UserError(
                f"{unit.algorithm} produced a non-finite {name} ({values[t]}) at round {t} of unit "
                f"{unit.id}; check its hyper-parameters"
            )


def has_diagnostics(policy: MemberPolicy | UnitPolicies) -> bool:
    """Whether the group's policy class reports any diagnostic (overrides one of the contract's)."""
    kind, base = (
        (type(policy), MemberPolicy) if isinstance(policy, MemberPolicy) else (type(policy.policies[0]), Policy)
    )
    return any(getattr(kind, name) is not getattr(base, name) for name in ("clusters", "sharing_graph", "diagnostics"))


def sample_diagnostics(policy: MemberPolicy | UnitPolicies, m: int, true_groups: np.ndarray | None) -> dict[str, float]:
    """Member m's clustering scores and other diagnostics."""
    return {**clustering_scores(true_groups, policy.clusters(m), policy.sharing_graph(m)), **policy.diagnostics(m)}
