"""The problems of the Deep Bayesian Bandits Showdown (Riquelme, Tucker & Snoek, ICLR 2018, §4 and App. A), prepared
as rewards tables (banditbench/envs/rewards_table.py): a context per row and a reward for every action.

- ``showdown-wheel``: contexts uniform on the unit disc; five actions. Inside the radius δ every action a₁…a₄
  pays N(1.0, σ²) and a₅ pays N(1.2, σ²), so a₅ is optimal; outside it, the action of the context's quadrant
  (a₁: x₁ > 0, x₂ > 0; a₂: x₁ > 0, x₂ ≤ 0; a₃: x₁ ≤ 0, x₂ > 0; a₄: x₁ ≤ 0, x₂ ≤ 0) pays N(50, σ²) instead,
  σ = 0.01 (the authors' example script draws the small rewards with σ = 0.05: ``--small-sigma 0.05``); the
  boundary ‖x‖ = δ counts as outside. Large δ hides the high-reward region from an explorer.
- ``showdown-mushroom``: the 22 attributes one-hot (117 features, not normalised); action 0 is "don't eat" (0),
  action 1 "eat": +5 for an edible mushroom, for a poisonous one +5 or −35 with probability ½ each (mean −15).
- ``showdown-statlog`` (the shuttle training file, 43 500 rows) and ``showdown-covertype`` (581 012 rows): each
  feature standardised to mean 0 and standard deviation 1 (a constant feature only centred), reward 1 for the
  row's class and 0 for every other action.
- ``showdown-adult``: the rows without a missing attribute; the occupation is the action (14 of them), the
  numeric attributes and the one-hot categorical ones (the income class among them) are the context, standardised
  as statlog's; reward 1 for the row's occupation.
- ``showdown-census``: the coded US Census 1990 table; ``--contexts`` people drawn without replacement from
  ``--seed`` (the Showdown shuffles the rows and keeps the first ones, at most 150 000). The occupation group
  (dOccup) is the action, the case id is dropped and every other attribute is one-hot over the codes the sample
  holds, then standardised as statlog's; reward 1 for the person's group. The actions are the whole file's groups,
  so a group the sample lacks stays an action that never pays (the Showdown numbers the sample's groups).
- ``showdown-jester``: the dense subset of the Jester ratings (19 181 users who rated all 40 jokes); a user's
  ratings of the first 32 jokes are the context and recommending one of the last 8 pays its rating, so every
  action's reward is known and the regret exact. The Showdown's sampler keeps the file's joke order unless asked
  to shuffle it, and its example script asks, from the unseeded global generator, so each of its runs splits other
  jokes; the paper does not mention it. Here the file's order is the default and ``--shuffle-jokes`` permutes the
  40 jokes once, from ``--seed``, before the split.
- ``showdown-financial``: the Showdown's 3 713 trading days, each day's price changes of 21 stocks as the context
  (not normalised); 8 synthetic portfolios are the actions. As its stock sampler: portfolio a's weights β_a are
  drawn once (here from ``--seed``), uniform on [−1, 1]²¹ and scaled to unit norm, and it pays ⟨β_a, x⟩ + N(0, σ_a²)
  with σ_a = 0.01·a for a = 1…8, the noise levels its example script passes.

Neither UCI nor the Showdown's mirror publishes checksums. The census file must have UCI's row count (2 458 285
people after the header, unless ``--no-verify``) and the 69 column names, the Jester array the 19 181 × 40 shape
its name announces, the stock file 3 713 days of 21 numbers; every value is checked where it is read, and the
sha256 of what was read is recorded.

The Showdown draws a problem's rewards once per row; so does prepare, from ``--seed``. Its samplers pick
``num_contexts`` rows per run; here a run streams passes over a seeded shuffle of every prepared row, or keeps
``--env contexts=N`` rows of its own (banditbench/envs/rewards_table.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import rows
from banditbench.data.classification import FAMILIES, UCI
from banditbench.data.fetch import UNVERIFIED, Download, RawFiles, RawSpec, mismatch, raw_files, reading
from banditbench.data.prepared import up_to_date, write_dataset
from banditbench.data.registry import Dataset, Option, register
from banditbench.data.sanity import rows_report
from banditbench.errors import UserError

PAPER = "Riquelme, Tucker & Snoek, ICLR 2018 (Deep Bayesian Bandits Showdown)"
# the problems whose features are standardised when prepared, which a run keeping fewer rows standardises again
STANDARDISED = ("showdown-statlog", "showdown-covertype", "showdown-adult", "showdown-census")
PROTOCOL = "rewards-table"
TABLE = "rows"  # the one table of a prepared problem

# the wheel bandit (§4, "The wheel bandit")
WHEEL_MEANS = (1.0, 1.0, 1.0, 1.0, 1.2)  # inside the radius δ: a₅ is best
WHEEL_LARGE = 50.0  # the quadrant's action outside the radius
WHEEL_SIGMA = 0.01

# mushroom (§4 and App. A): action 0 = don't eat, action 1 = eat
EAT_EDIBLE, EAT_POISONOUS_GOOD, EAT_POISONOUS_BAD, DONT_EAT = 5.0, 5.0, -35.0, 0.0
POISON_BAD_PROBABILITY = 0.5


def rewards_table(x: np.ndarray, rewards: np.ndarray, means: np.ndarray) -> pd.DataFrame:
    """The protocol's table: contexts x_j, realised rewards reward_a and their expectations mean_a."""
    frame = pd.DataFrame(x, columns=[f"x_{j}" for j in range(x.shape[1])])
    for a in range(rewards.shape[1]):
        frame[f"reward_{a}"] = rewards[:, a]
    for a in range(rewards.shape[1]):
        frame[f"mean_{a}"] = means[:, a]
    return frame


def counts_of(x: np.ndarray, means: np.ndarray) -> dict[str, int]:
    best = np.bincount(means.argmax(axis=1), minlength=means.shape[1])
    return {"rows": len(x), "features": x.shape[1], "actions": means.shape[1]} | {
        f"best_action_{a}": int(n) for a, n in enumerate(best)
    }


# ---------------------------------------------------------------- the wheel bandit


def unit_disc(n: int, rng: np.random.Generator) -> np.ndarray:
    """n points uniform on the unit disc, by rejection from the square [−1, 1]²."""
    points = np.empty((0, 2))
    while len(points) < n:
        square = rng.uniform(-1.0, 1.0, size=(2 * n, 2))
        points = np.concatenate([points, square[np.linalg.norm(square, axis=1) <= 1.0]])
    return points[:n]


def wheel_means(x: np.ndarray, delta: float) -> np.ndarray:
    """The expected reward of every action [n, 5] at contexts x [n, 2]."""
    means = np.tile(np.asarray(WHEEL_MEANS), (len(x), 1))
    outside = np.linalg.norm(x, axis=1) >= delta
    quadrant = 2 * (x[:, 0] <= 0) + (x[:, 1] <= 0)  # a₁ … a₄ ↔ 0 … 3
    means[outside, quadrant[outside]] = WHEEL_LARGE
    return means


def prepare_wheel(
    data_dir: Path, *, delta: float, contexts: int, seed: int, small_sigma: float = WHEEL_SIGMA, force: bool = False
) -> Path:
    """``small_sigma``: the noise of the small rewards (1.0 and 1.2); the paper's σ = 0.01 for every reward, its
    authors' example script 0.05 for the small ones and 0.01 for the large one."""
    parameters = {"delta": delta, "contexts": contexts, "seed": seed}
    if small_sigma != WHEEL_SIGMA:  # the paper's setting keeps the manifests it always had
        parameters["small_sigma"] = small_sigma
    folder = Path(data_dir) / "showdown-wheel"
    if up_to_date(folder, parameters, force):
        return folder
    rng = np.random.default_rng(seed)
    x = unit_disc(contexts, rng)
    means = wheel_means(x, delta)
    sigma = np.where(means == WHEEL_LARGE, WHEEL_SIGMA, small_sigma)
    rewards = means + sigma * rng.standard_normal(means.shape)
    tables = {TABLE: rewards_table(x, rewards, means)}
    return write_dataset(
        folder, "showdown-wheel", tables, parameters, protocol=PROTOCOL, counts=counts_of(x, means), force=force
    )


# ---------------------------------------------------------------- tables of the UCI files


def mushroom_rewards(edible: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Realised and expected rewards [n, 2] of (don't eat, eat) for mushrooms that are edible or not."""
    bad = rng.random(len(edible)) < POISON_BAD_PROBABILITY
    eat = np.where(edible, EAT_EDIBLE, np.where(bad, EAT_POISONOUS_BAD, EAT_POISONOUS_GOOD))
    poisonous_mean = POISON_BAD_PROBABILITY * EAT_POISONOUS_BAD + (1 - POISON_BAD_PROBABILITY) * EAT_POISONOUS_GOOD
    eat_mean = np.where(edible, EAT_EDIBLE, poisonous_mean)
    dont = np.full(len(edible), DONT_EAT)
    return np.column_stack([dont, eat]), np.column_stack([dont, eat_mean])


# adult (App. A): the occupation is the action; the other 13 attributes and the income class form the context
ADULT_OCCUPATION = 6
ADULT_NUMERIC = [0, 2, 4, 10, 11, 12]  # age, fnlwgt, education-num, capital gain and loss, hours per week
ADULT_CATEGORICAL = [1, 3, 5, 7, 8, 9, 13, 14]


def adult_spec(split: str) -> RawSpec:
    """UCI publishes no checksum of adult.data, but adult.names gives its rows (train=32561): 32 562 lines with the
    empty one the file ends with."""
    download = Download(UCI + "adult/adult.data", "adult.data")
    return RawSpec("adult", (download,), {"data": ("adult.data",)}, member_rows={"adult.data": 32_562})


def read_adult(raw: RawFiles, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows with a missing attribute ('?') dropped, as the Showdown does (recorded in ``raw.dropped``); the numeric
    attributes as they are and the categorical ones one-hot; the occupation's classes in sorted order."""
    path = raw["data"]
    expected = "comma-separated adult rows (14 attributes, then the income class)"
    frame = rows.read_fields(path, expected, list(range(15)), dtype=str)
    frame = frame.apply(lambda column: column.str.strip())
    known = ~(frame.isna() | (frame == "?")).any(axis=1)
    raw.dropped["missing attribute"] = int((~known).sum())
    frame = frame[known]
    labels = np.unique(frame[ADULT_OCCUPATION].to_numpy(), return_inverse=True)[1]
    onehot = pd.get_dummies(frame[ADULT_CATEGORICAL], prefix=[f"a{j}" for j in ADULT_CATEGORICAL])
    numeric = [rows.numbers(frame[j], path, f"attribute {j + 1}", header=None) for j in ADULT_NUMERIC]
    x = np.hstack([np.column_stack(numeric).astype(np.float32), onehot.to_numpy(np.float32)])
    return x, labels.astype(np.int64)


def standardised(x: np.ndarray) -> np.ndarray:
    """Each feature to mean 0 and standard deviation 1; a constant one is only centred (its std taken as 1)."""
    std = x.std(axis=0)
    return (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0)


def one_hot_rewards(labels: np.ndarray, actions: int | None = None) -> np.ndarray:
    """Reward 1 for the row's class and 0 for every other of ``actions`` (the classes seen, when None)."""
    rewards = np.zeros((len(labels), actions or int(labels.max()) + 1))
    rewards[np.arange(len(labels)), labels] = 1.0
    return rewards


def prepare_uci(
    data_dir: Path,
    name: str,
    *,
    seed: int = 0,
    verify: bool = True,
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
) -> Path:
    """``showdown-NAME`` from its raw files (``SOURCES[name]``)."""
    spec, read, split = SOURCES[name]
    parameters = {"verify": verify} | ({"seed": seed} if name == "mushroom" else {})
    folder = Path(data_dir) / f"showdown-{name}"
    if up_to_date(folder, parameters, force):
        return folder
    with raw_files(spec(split), source, offline, cache, verify) as raw:
        x, y = read(raw, split)
    x = x.astype(np.float64)
    if name == "mushroom":
        # the reader refuses short rows; classes sorted: e (edible) = 0, p = 1
        rewards, means = mushroom_rewards(y == 0, np.random.default_rng(seed))
    else:
        x, rewards = standardised(x), one_hot_rewards(y)
        means = rewards
    return write_problem(folder, parameters, x, rewards, means, raw, force)


def write_problem(
    folder: Path,
    parameters: dict,
    x: np.ndarray,
    rewards: np.ndarray,
    means: np.ndarray,
    raw: RawFiles,
    force: bool,
) -> Path:
    """The problem's table and manifest: the raw files read, the rows read and those a reader dropped (by reason)."""
    return write_dataset(
        folder,
        folder.name,
        {TABLE: rewards_table(x, rewards, means)},
        parameters,
        protocol=PROTOCOL,
        raw_files=raw.records,
        counts=counts_of(x, means),
        force=force,
        rows=rows_report(len(x) + sum(raw.dropped.values()), raw.dropped),
        verification=raw.verification,
    )


# problem → (its raw files, their reader, the split the Showdown uses): the classification families' where they exist
SOURCES = {
    "mushroom": (FAMILIES["mushroom"].spec, FAMILIES["mushroom"].read, "all"),
    "statlog": (FAMILIES["shuttle"].spec, FAMILIES["shuttle"].read, "train"),
    "covertype": (FAMILIES["covertype"].spec, FAMILIES["covertype"].read, "all"),
    "adult": (adult_spec, read_adult, "all"),
}
FILES = {"adult": "adult.data"} | {
    name: FAMILIES[family].files
    for name, family in (("mushroom", "mushroom"), ("statlog", "shuttle"), ("covertype", "covertype"))
}
DESCRIPTIONS = {
    "mushroom": "UCI Mushroom as eat / don't eat: +5 edible, +5 or −35 (p = ½) poisonous, 0; 117 one-hot features",
    "statlog": "UCI Statlog Shuttle training file, 43 500 rows, 9 standardised features, 7 actions (reward 1 if the "
    "class)",
    "covertype": "UCI Covertype, 581 012 rows, 54 standardised features, 7 actions (reward 1 if the class)",
    "adult": "UCI Adult without its rows of missing values, the occupation as action (14), the other attributes "
    "standardised, the categorical ones one-hot (reward 1 for the row's occupation)",
}


def declare_uci(name: str) -> Dataset:
    def run(data_dir, **values):
        return prepare_uci(data_dir, name, **values)

    spec, _, split = SOURCES[name]
    seed = (Option("seed", int, 0, "Seed of the poisonous mushrooms' reward draws.", minimum=0),)
    return Dataset(
        f"showdown-{name}",
        DESCRIPTIONS[name],
        PAPER,
        PROTOCOL,
        run,
        seed if name == "mushroom" else (),
        raw=lambda split=split: spec(split),
        files=FILES[name],
    )


# ---------------------------------------------------------------- census


# The coded US Census 1990 table (UCI; Meek, Thiesson & Heckerman 2002): a header naming 69 columns, then one line
# per person of whole-number codes. UCI's page gives its row count; no checksum is published.
CENSUS_COLUMNS = (
    "caseid", "dAge", "dAncstry1", "dAncstry2", "iAvail", "iCitizen", "iClass", "dDepart", "iDisabl1", "iDisabl2",
    "iEnglish", "iFeb55", "iFertil", "dHispanic", "dHour89", "dHours", "iImmigr", "dIncome1", "dIncome2", "dIncome3",
    "dIncome4", "dIncome5", "dIncome6", "dIncome7", "dIncome8", "dIndustry", "iKorean", "iLang1", "iLooking",
    "iMarital", "iMay75880", "iMeans", "iMilitary", "iMobility", "iMobillim", "dOccup", "iOthrserv", "iPerscare",
    "dPOB", "dPoverty", "dPwgt1", "iRagechld", "dRearning", "iRelat1", "iRelat2", "iRemplpar", "iRiders", "iRlabor",
    "iRownchld", "dRpincome", "iRPOB", "iRrelchld", "iRspouse", "iRvetserv", "iSchool", "iSept80", "iSex",
    "iSubfam1", "iSubfam2", "iTmpabsnt", "dTravtime", "iVietnam", "dWeek89", "iWork89", "iWorklwk", "iWWII",
    "iYearsch", "iYearwrk", "dYrsserv",
)  # fmt: skip
CENSUS_FILE = "USCensus1990.data.txt"
CENSUS_ROWS = 2_458_285
CENSUS_ACTION, CENSUS_KEY = "dOccup", "caseid"  # the occupation group is the action; the case id is no attribute
CENSUS_MOST = 150_000  # the Showdown's example script takes at most this many census rows
UCI_STATIC = "https://archive.ics.uci.edu/static/public/"
SHOWDOWN_MIRROR = "https://storage.googleapis.com/bandits_datasets/"


def census_spec() -> RawSpec:
    zipped = Download(UCI_STATIC + "116/us+census+data+1990.zip", "us+census+data+1990.zip")
    names = (CENSUS_FILE, f"{CENSUS_FILE}.gz")
    return RawSpec("census", (zipped,), {"data": names}, member_rows={n: CENSUS_ROWS + 1 for n in names})


def read_census(path: Path) -> pd.DataFrame:
    """Every row of the coded table, each value checked to be a whole number ≥ 0 (read as float32: exact for
    the largest case id, and a quarter of int64's memory for 2.5 million rows)."""
    expected = f"the coded US Census 1990 table: a header of {len(CENSUS_COLUMNS)} names ({CENSUS_KEY}, dAge, …), then "
    expected += "comma-separated whole numbers"
    columns = list(CENSUS_COLUMNS)
    frame = rows.read_fields(path, expected, columns, header=CENSUS_COLUMNS, dtype=np.float32, na_values=[""])
    for name in columns:
        rows.numbers(frame[name], path, name, header=1, low=0, step=1)
    return frame


def census_sample(frame: pd.DataFrame, contexts: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """``contexts`` rows drawn without replacement, as the Showdown's shuffle-then-head does: their attributes
    one-hot over the values the sample holds, their occupation group's index among the whole file's groups, and
    the number of groups (the actions)."""
    groups = np.unique(frame[CENSUS_ACTION].to_numpy())
    sample = frame.iloc[rng.choice(len(frame), size=contexts, replace=False)]
    attributes = sample.drop(columns=[CENSUS_ACTION, CENSUS_KEY]).astype(np.int64)
    onehot = pd.get_dummies(attributes, columns=list(attributes.columns))
    labels = np.searchsorted(groups, sample[CENSUS_ACTION].to_numpy())
    return onehot.to_numpy(np.float64), labels, len(groups)


def prepare_census(
    data_dir: Path,
    *,
    contexts: int = 2000,
    seed: int = 0,
    verify: bool = True,
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
) -> Path:
    """``showdown-census``: a seeded sample of ``contexts`` people, every attribute one-hot and standardised as
    statlog's, reward 1 for the person's occupation group."""
    parameters = {"contexts": contexts, "seed": seed, "verify": verify}
    folder = Path(data_dir) / "showdown-census"
    if up_to_date(folder, parameters, force):
        return folder
    with raw_files(census_spec(), source, offline, cache, verify) as raw:
        frame = read_census(raw["data"])
        if contexts > len(frame):
            raise UserError(f"--contexts {contexts} is more than the {len(frame):,} rows of {raw['data']}")
        x, labels, groups = census_sample(frame, contexts, np.random.default_rng(seed))
        raw.dropped["not in the --contexts sample"] = len(frame) - contexts
    rewards = one_hot_rewards(labels, groups)
    return write_problem(folder, parameters, standardised(x), rewards, rewards, raw, force)


# ---------------------------------------------------------------- jester


# The dense subset of the Jester joke ratings (Goldberg, Roeder, Gupta & Perkins 2001) the Showdown serves: one row
# per user who rated all 40 jokes, ratings on Jester's continuous scale from −10 to +10.
JESTER_FILE = "jester_data_40jokes_19181users.npy"
JESTER_USERS, JESTER_JOKES = 19_181, 40
JESTER_CONTEXT = 32  # the Showdown's context_dim: the first 32 jokes are the context, the last 8 the actions
JESTER_LOWEST, JESTER_HIGHEST = -10.0, 10.0


def jester_spec() -> RawSpec:
    return RawSpec("jester", (Download(SHOWDOWN_MIRROR + JESTER_FILE, JESTER_FILE),), {"data": (JESTER_FILE,)})


def read_jester(raw: RawFiles) -> np.ndarray:
    """The ratings [users, 40], each a finite number within Jester's scale; refused unless the file holds the
    19 181 users its name announces (``--no-verify`` accepts another count)."""
    path = raw["data"]
    with reading(path, "a NumPy .npy array of ratings, one row per user and one column per joke"):
        ratings = np.load(path, allow_pickle=False)
    if not isinstance(ratings, np.ndarray) or ratings.ndim != 2 or ratings.shape[1] != JESTER_JOKES:
        shape = getattr(ratings, "shape", "an archive of arrays")
        raise UserError(f"{path}: holds an array of shape {shape}, expected (users, {JESTER_JOKES} jokes)")
    if not (np.issubdtype(ratings.dtype, np.integer) or np.issubdtype(ratings.dtype, np.floating)):
        raise UserError(f"{path}: holds {ratings.dtype} values, expected ratings (numbers)")
    ratings = ratings.astype(np.float64)
    outside = ~np.isfinite(ratings) | (ratings < JESTER_LOWEST) | (ratings > JESTER_HIGHEST)
    if outside.any():
        user, joke = np.argwhere(outside)[0]
        raise UserError(
            f"{path}: user {user + 1}, joke {joke + 1}: rating {ratings[user, joke]:g} is outside Jester's scale "
            f"{JESTER_LOWEST:g} to {JESTER_HIGHEST:g} (the dense subset has no unrated joke)"
        )
    if raw.verification != UNVERIFIED and len(ratings) != JESTER_USERS:
        raise mismatch(path, f"{JESTER_USERS:,} users (the file's name)", f"{len(ratings):,}", "row count")
    return ratings


def prepare_jester(
    data_dir: Path,
    *,
    context_jokes: int = JESTER_CONTEXT,
    shuffle_jokes: bool = False,
    seed: int = 0,
    verify: bool = True,
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
) -> Path:
    """``showdown-jester``: a user's ratings of the first ``context_jokes`` jokes (32) are the context; recommending
    one of the others (8) pays the user's rating of it, known for every joke, so the best action and the regret are
    exact. ``shuffle_jokes``: the jokes (columns) are permuted from ``seed`` before the split, as the Showdown's
    example script does (its ``shuffle_cols``); the permutation is recorded in the manifest."""
    parameters = {"context_jokes": context_jokes, "verify": verify}
    jokes = np.arange(JESTER_JOKES)
    if shuffle_jokes:  # the file's order keeps the manifests it always had
        jokes = np.random.default_rng(seed).permutation(JESTER_JOKES)
        # the file's joke numbers in their new order, context jokes first
        parameters.update(shuffle_jokes=True, seed=seed, joke_order=(jokes + 1).tolist())
    folder = Path(data_dir) / "showdown-jester"
    if up_to_date(folder, parameters, force):
        return folder
    with raw_files(jester_spec(), source, offline, cache, verify) as raw:
        ratings = read_jester(raw)[:, jokes]
    x, rewards = ratings[:, :context_jokes], ratings[:, context_jokes:]
    return write_problem(folder, parameters, x, rewards, rewards, raw, force)


# ---------------------------------------------------------------- financial


# The Showdown's stock contexts: a first line it skips, then one line per trading day of 21 whitespace-separated
# numbers, the day's price change of each stock. Its example script takes at most 3 713 days, the file's length.
STOCK_FILE = "raw_stock_contexts"
STOCKS, TRADING_DAYS = 21, 3713
PORTFOLIO_NOISE = tuple(0.01 * (a + 1) for a in range(8))  # σ_a of portfolio a's reward, as its example script sets


def stock_spec() -> RawSpec:
    return RawSpec("financial", (Download(SHOWDOWN_MIRROR + STOCK_FILE, STOCK_FILE),), {"data": (STOCK_FILE,)})


def read_stocks(raw: RawFiles) -> np.ndarray:
    """The days' price changes [days, 21], each a finite number; refused unless there are 3 713 days
    (``--no-verify`` accepts another count)."""
    path = raw["data"]
    expected = f"a first line, then lines of {STOCKS} whitespace-separated numbers"
    with reading(path, expected):
        lines = path.read_bytes().split(b"\n")
    # the first line emptied rather than dropped, so that a refused value names the file's own line
    text = b"\n".join([b"", *(b",".join(line.split()) for line in lines[1:])])
    names = [f"stock {j + 1}" for j in range(STOCKS)]
    frame = rows.read_fields(path, expected, names, text=text)
    changes = np.column_stack([rows.numbers(frame[name], path, name, header=1) for name in names])
    if raw.verification != UNVERIFIED and len(changes) != TRADING_DAYS:
        raise mismatch(path, f"{TRADING_DAYS:,} days (the Showdown's)", f"{len(changes):,}", "row count")
    return changes


def portfolios(changes: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Realised and expected rewards [days, 8] of the Showdown's synthetic portfolios: each action's weights β_a are
    drawn once, uniform on [−1, 1]^21 and scaled to unit norm; it pays ⟨β_a, x⟩ + N(0, σ_a²)."""
    weights = rng.uniform(-1.0, 1.0, size=(STOCKS, len(PORTFOLIO_NOISE)))
    weights /= np.linalg.norm(weights, axis=0)
    means = changes @ weights
    return means + rng.standard_normal(means.shape) * np.asarray(PORTFOLIO_NOISE), means


def prepare_financial(
    data_dir: Path,
    *,
    seed: int = 0,
    verify: bool = True,
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
) -> Path:
    """``showdown-financial``: a day's 21 price changes are the context, the 8 portfolios of ``--seed`` the
    actions."""
    parameters = {"seed": seed, "verify": verify}
    folder = Path(data_dir) / "showdown-financial"
    if up_to_date(folder, parameters, force):
        return folder
    with raw_files(stock_spec(), source, offline, cache, verify) as raw:
        changes = read_stocks(raw)
    rewards, means = portfolios(changes, np.random.default_rng(seed))
    return write_problem(folder, parameters, changes, rewards, means, raw, force)


register(
    Dataset(
        "showdown-wheel",
        "the wheel bandit: contexts on the unit disc, 5 actions, reward 50 in the context's quadrant beyond radius δ",
        PAPER,
        PROTOCOL,
        prepare_wheel,
        (
            Option(
                "delta",
                float,
                0.95,
                "Radius δ of the inner disc where a₅ (mean 1.2) is best.",
                minimum=0.0,
                maximum=1.0,
            ),
            Option("contexts", int, 2000, "Rows (contexts) to draw.", minimum=1),
            Option("seed", int, 0, "Seed of the contexts and reward draws.", minimum=0),
            Option(
                "small_sigma",
                float,
                WHEEL_SIGMA,
                "Noise σ of the small rewards (1.0, 1.2): the paper's 0.01, or 0.05 as the authors' example script.",
                minimum=0.0,
            ),
        ),
        reads_raw=False,
        files="none: generated",
    )
)
for _name in SOURCES:
    register(declare_uci(_name))
register(
    Dataset(
        "showdown-census",
        "UCI US Census 1990 (coded), a seeded sample of people, the occupation group as action (9 in the "
        "Showdown), every other attribute one-hot and standardised (reward 1 for the person's group)",
        PAPER,
        PROTOCOL,
        prepare_census,
        (
            Option(
                "contexts",
                int,
                2000,
                "People (rows) to sample; the Showdown takes at most 150 000.",
                minimum=1,
                maximum=CENSUS_MOST,
            ),
            Option("seed", int, 0, "Seed of the sample.", minimum=0),
        ),
        raw=census_spec,
        files=f"{CENSUS_FILE}(.gz), or UCI's us+census+data+1990.zip; the Showdown's copy: --source "
        f"{SHOWDOWN_MIRROR}{CENSUS_FILE}",
    )
)
register(
    Dataset(
        "showdown-jester",
        "Jester's dense subset, 19 181 users × 40 jokes: the ratings of the first 32 jokes as context, the last 8 as "
        "actions (reward the user's rating of the joke, −10 to 10)",
        PAPER,
        PROTOCOL,
        prepare_jester,
        (
            Option(
                "context_jokes",
                int,
                JESTER_CONTEXT,
                "Jokes whose ratings are the context (the first ones); the others are the actions.",
                minimum=1,
                maximum=JESTER_JOKES - 1,
            ),
            Option(
                "shuffle_jokes",
                bool,
                False,
                "Permute the 40 jokes from --seed before the split, as the Showdown's example script does.",
            ),
            Option("seed", int, 0, "Seed of the jokes' permutation (with --shuffle-jokes).", minimum=0),
        ),
        raw=jester_spec,
        files=f"{JESTER_FILE} (the Showdown's copy, downloaded)",
    )
)
register(
    Dataset(
        "showdown-financial",
        "the Showdown's 3 713 trading days of 21 stocks' price changes as context, 8 synthetic portfolios as actions "
        "(reward a seeded unit-norm linear function of the day plus N(0, σ_a²), σ_a = 0.01·a)",
        PAPER,
        PROTOCOL,
        prepare_financial,
        (Option("seed", int, 0, "Seed of the portfolios' weights and the reward noise.", minimum=0),),
        raw=stock_spec,
        files=f"{STOCK_FILE} (the Showdown's copy, downloaded)",
    )
)
