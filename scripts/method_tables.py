"""docs/method.md's figures of the base-vs-head gate, from measured sessions: real and simulated side by side.

    .venv/bin/python scripts/method_tables.py --data sessions.jsonl --write   # splice the tables into docs/method.md
    .venv/bin/python scripts/method_tables.py --data sessions.jsonl           # print them
    .venv/bin/python scripts/method_tables.py --check                         # the page is what the data give
    .venv/bin/python scripts/method_tables.py --data X.jsonl --section NAME --write  # another campaign's block

``--data`` is what ``scripts/pair_sessions.py`` writes (one JSON line per
session), or a JSON document with a ``sessions`` list of such lines (the
committed ``tests/data/pair_sessions.json``, the default). From it:

- a noise model (:class:`Noise`), fitted per session with the gate's own
  estimator (log img/s on arm and run index): each session's run noise, their
  spread between sessions (log-normal, less what the estimate's own error
  explains), the correlation of the two runs of a pair, the drift per run;
  and the cost of a session in pytest seconds (a line through seconds against
  runs);
- a seeded simulation that drives the plugin's own decision and stopping rule
  (:func:`pytest_bpsperf.judge.pairs.decide_pairs`, pairs until decided, up to
  ``max_pairs``) with runs drawn from that model, each simulated job with a
  session of its own;
- the real sessions replayed with today's decision at the default gate (the
  verdict each would have reached on the runs it took; a session that stopped
  before the replay could decide is left out and counted);

and the tables: the operating curve at the defaults (-5 to -25%, regression,
ok, inconclusive, pairs and pytest time per job), real beside simulated, and
the A/A rates per tolerance. ``tests/unit/judge/test_pairs.py``
checks that docs/method.md holds what this computes from the committed data.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import sys
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_bpsperf.config.settings import OPTIONS_BY_NAME  # noqa: E402
from pytest_bpsperf.judge.pairs import PairedVerdict, decide_pairs, first_arm  # noqa: E402
from pytest_bpsperf.stats.sequential import MIN_PAIRS  # noqa: E402
from pytest_bpsperf.stats.tdist import _regularized_incomplete_beta  # noqa: E402

DATA = ROOT / "tests" / "data" / "pair_sessions.json"
PAGE = ROOT / "docs" / "method.md"
START, END = "<!-- method-tables: start (scripts/method_tables.py --write) -->", "<!-- method-tables: end -->"


def markers(section: "str | None" = None) -> "tuple[str, str]":
    """The markers of a block of docs/method.md: the main one, or ``section``'s (``--section``)."""
    if section is None:
        return START, END
    return (
        f"<!-- method-tables {section}: start (scripts/method_tables.py --section {section} --write) -->",
        f"<!-- method-tables {section}: end -->",
    )


#: the curve's changes (percent) and the tolerances of the A/A table
CURVE = (0.0, -5.0, -7.5, -10.0, -12.5, -15.0, -25.0)
TOLERANCES = (0.05, 0.075, 0.10, 0.15, 0.20)
#: max_pairs of the design table, and the noise levels it is drawn at (the fitted one, and noisier)
MAX_PAIRS = (12, 20, 30)
NOISIER = (1.0, 1.5)
JOBS = 1000  # simulated jobs per row
SEED = 7


@dataclass(frozen=True)
class Gate:
    """The settings a job is decided with."""

    tolerance: float = OPTIONS_BY_NAME["tolerance"].default
    confidence: float = OPTIONS_BY_NAME["confidence"].default
    max_pairs: int = OPTIONS_BY_NAME["max_pairs"].default
    first_look: int = MIN_PAIRS


@dataclass(frozen=True)
class Session:
    """One measured session: its kind, the slowdown it injected (percent), its pair table, what it reported."""

    index: int
    kind: str
    slowdown_pct: float
    table: tuple
    status: str
    pairs: int
    seconds: float
    runs: int
    rule: str  # "tolerance-interval" (today's rule) or "before" (an older rule: not replayed as its own)
    gate: Gate
    steps: tuple = ()  # per run: one worker's step times (for the split of noise between steps and runs)


def load(path: "str | Path") -> "list[Session]":
    """The sessions of a JSON-lines file from scripts/pair_sessions.py, or of a document with ``sessions``."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
        lines = doc["sessions"] if isinstance(doc, dict) else doc
    except ValueError:
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    out = []
    for k, line in enumerate(lines):
        if line.get("sizing") or not line.get("jobs"):
            continue
        job = line["jobs"][0]
        gate = line.get("gate") or {}
        comparison = job.get("comparison") or {}
        defaults = Gate(tolerance=0.15, max_pairs=12)  # what sessions recorded before the gate was
        g = Gate(
            tolerance=gate.get("tolerance") or defaults.tolerance,
            confidence=gate.get("confidence") or defaults.confidence,
            max_pairs=gate.get("max_pairs") or defaults.max_pairs,
            first_look=max(MIN_PAIRS, int(gate.get("repeats") or 1)),
        )
        steps = tuple(tuple(r["step_s"][0]) for r in line.get("runs", []) if r.get("step_s") and r["step_s"][0])
        out.append(
            Session(
                index=int(line.get("index", k)),
                kind=line["kind"],
                slowdown_pct=_slowdown(line),
                table=tuple(job["pair_table"]),
                status=job["status"],
                pairs=int(job["pairs"]),
                seconds=float(line["seconds"]),
                runs=len(line.get("runs") or ()) or 2 * len(job["pair_table"]),
                rule="tolerance-interval" if "tolerance_level" in comparison else "before",
                gate=g,
                steps=steps,
            )
        )
    return out


def _slowdown(line: dict) -> float:
    """The percentage of the session's fault (0 for older files, which slowed by a code change)."""
    return float(line.get("slowdown_pct") or 0.0)


def target(kind: str) -> float:
    """The change a kind is named for, in percent: ``aa`` 0, ``s10`` -10 (the slowdown sized to it)."""
    found = re.fullmatch(r"s(\d+(?:\.\d+)?)", kind)
    return -float(found.group(1)) if found else 0.0


# -- the noise model ---------------------------------------------------------------------------
def _design(table: "tuple") -> "list[tuple[int, float, float, float]]":
    """The valid runs of a pair table: (pair, head?, slot in the job, log img/s)."""
    runs = []
    for row in table:
        if row.get("ratio") is None or row.get("dropped"):
            continue
        i = int(row["pair"]) - 1
        base_first = str(row.get("order", "base-head")).startswith("base")
        runs.append((i, 0.0, 2.0 * i + (0 if base_first else 1), math.log(row["base_img_per_sec"])))
        runs.append((i, 1.0, 2.0 * i + (1 if base_first else 0), math.log(row["head_img_per_sec"])))
    return runs


def _solve(a: "list[list[float]]", b: "list[float]") -> "list[float]":
    """a x = b for a small symmetric positive definite a (Gaussian elimination)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        piv = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[piv] = m[piv], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]


def _fit_session(table: "tuple") -> "tuple[float, float, int, list[tuple[float, float]], tuple] | None":
    """log img/s ~ 1 + arm + run index on one session: (change, drift per run, dof, per-pair residuals
    (base, head), the moments that tie the residuals' within-pair products to the correlation)."""
    runs = _design(table)
    n = len(runs)
    if n < 6:
        return None
    X = [[1.0, x, t] for _i, x, t, _y in runs]
    xtx = [[sum(r[a] * r[b] for r in X) for b in range(3)] for a in range(3)]
    coef = _solve(xtx, [sum(r[a] * y for r, (_i, _x, _t, y) in zip(X, runs)) for a in range(3)])
    inv = [_solve(xtx, [1.0 if k == j else 0.0 for k in range(3)]) for j in range(3)]
    hat = [[sum(X[p][a] * inv[a][b] * X[q][b] for a in range(3) for b in range(3)) for q in range(n)] for p in range(n)]
    resid = {}
    mate = {}  # run -> the other run of its pair
    for p, (i, x, _t, y) in enumerate(runs):
        resid.setdefault(i, [0.0, 0.0])[int(x)] = y - sum(c * v for c, v in zip(coef, X[p]))
        mate.setdefault(i, []).append(p)
    # residuals e = M y with M = I - H; with Cov(y) = s^2 (I + rho R), R pairing the two runs of a pair:
    # E[sum over pairs e_b e_h] = s^2 (A + rho C) and E[sum of e^2] / 2 = s^2 (D + rho F)
    m = [[(1.0 if p == q else 0.0) - hat[p][q] for q in range(n)] for p in range(n)]
    other = {p: q for pair in mate.values() if len(pair) == 2 for p, q in (pair, pair[::-1])}

    def mrm(p: int, q: int) -> float:  # (M R M)[p][q]
        return sum(m[p][k] * m[other[k]][q] for k in other)

    pairs = [pair for pair in mate.values() if len(pair) == 2]
    moments = (
        sum(m[p][q] for p, q in pairs),
        sum(mrm(p, q) for p, q in pairs),
        sum(m[p][p] for p in range(n)) / 2.0,
        sum(mrm(p, p) for p in range(n)) / 2.0,
    )
    design = (m, other, inv[2][2])  # the last: Var(drift estimate) / s^2
    return coef[1], coef[2], n - 3, [tuple(v) for v in resid.values()], moments, design  # type: ignore[misc]


def _polygamma(x: float) -> "tuple[float, float]":
    """(digamma, trigamma) of ``x > 0``: recurrence up to 6, then the asymptotic series."""
    psi = tri = 0.0
    while x < 6.0:
        psi -= 1.0 / x
        tri += 1.0 / (x * x)
        x += 1.0
    f = 1.0 / (x * x)
    psi += math.log(x) - 0.5 / x - f * (1 / 12 - f * (1 / 120 - f / 252))
    tri += 1.0 / x + 0.5 * f + (f / x) * (1 / 6 - f * (1 / 30 - f / 42))
    return psi, tri


def _log_sd_moments(m: "list[list[float]]", other: "dict[int, int]", rho: float) -> "tuple[float, float]":
    """(bias, variance) of log(residual SD) as an estimate of log(run SD), when the runs of a pair correlate
    by ``rho``: the residual sum of squares as a scaled chi-square with the dof of its first two moments
    (Satterthwaite), E e'e = s^2 tr(M S M) and Var e'e = 2 s^4 tr((M S M)^2), S = I + rho R."""
    n = len(m)
    sm = [[m[p][q] + rho * (m[other[p]][q] if p in other else 0.0) for q in range(n)] for p in range(n)]  # S M
    msm = [[sum(m[p][k] * sm[k][q] for k in range(n)) for q in range(n)] for p in range(n)]
    tr2 = sum(msm[p][q] * msm[q][p] for p in range(n) for q in range(n))
    mean = sum(msm[p][p] for p in range(n))
    k = mean * mean / tr2  # effective dof; the SD divides the sum by n - 3, whose scale is mean / (n - 3)
    psi, tri = _polygamma(k / 2.0)
    bias = 0.5 * (psi - math.log(k / 2.0) + math.log(mean / (n - 3)))
    return bias, tri / 4.0


@dataclass(frozen=True)
class Noise:
    """What the sessions measured: run noise per session (log-normal: median, spread), within-pair correlation,
    drift per run (mean, SD between sessions), and the pytest seconds of a session (fixed + per run)."""

    sd_median: float
    sd_spread: float
    rho: float
    drift: float
    drift_sd: float
    sessions: int
    seconds_fixed: float
    seconds_per_run: float


def fit(sessions: "list[Session]") -> Noise:
    """The noise model of ``sessions`` (every kind: the slowdown only moves the head arm's mean)."""
    logs, designs, slopes = [], [], []
    cross = sq = a_sum = c_sum = d_sum = f_sum = 0.0
    for s in sessions:
        fitted = _fit_session(s.table)
        if fitted is None:
            continue
        _delta, beta, dof, resid, (a, c, d, f), design = fitted
        ss = sum(b * b + h * h for b, h in resid)
        sd = math.sqrt(ss / dof)
        logs.append(math.log(sd))
        designs.append((design, dof))
        slopes.append((beta, sd * sd * design[2]))
        # each session's products in units of its own noise, so that noisy sessions do not outweigh the rest
        cross += sum(b * h for b, h in resid) / sd**2
        sq += ss / (2 * sd**2)
        a_sum, c_sum, d_sum, f_sum = a_sum + a, c_sum + c, d_sum + d, f_sum + f
    # the correlation that makes the products' ratio what the residuals' design expects (moments)
    ratio = cross / sq
    rho = (ratio * d_sum - a_sum) / (c_sum - ratio * f_sum) if c_sum - ratio * f_sum else 0.0
    rho = min(0.9, max(0.0, rho))
    # log SD of a session scatters by its own sampling error too: take that out of the spread, and
    # its bias (E log s is about log sigma - Var(log s)) out of the median
    own = [_log_sd_moments(m, other, rho) for (m, other, _v), _dof in designs]
    if len(logs) < 3:
        raise ValueError(f"{len(logs)} sessions with at least 3 pairs: a noise model needs 3 or more")
    spread = math.sqrt(max(0.0, statistics.variance(logs) - statistics.mean(v for _b, v in own)))
    # the slopes' spread, less what each slope's own estimation error explains
    drift_sd = math.sqrt(max(0.0, statistics.variance(b for b, _v in slopes) - statistics.mean(v for _b, v in slopes)))
    xs = [float(s.runs) for s in sessions]
    ys = [s.seconds for s in sessions]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    per_run = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else my / mx
    return Noise(
        sd_median=math.exp(statistics.mean(logs) - statistics.mean(b for b, _v in own)),
        sd_spread=spread,
        rho=rho,
        drift=statistics.mean(b for b, _v in slopes),
        drift_sd=drift_sd,
        sessions=len(logs),
        seconds_fixed=max(0.0, my - per_run * mx),
        seconds_per_run=per_run,
    )


# -- simulation --------------------------------------------------------------------------------
def _decide(table: "list[dict]", gate: Gate) -> PairedVerdict:
    """The plugin's own verdict of a job's pairs so far, at ``gate``'s settings."""
    return decide_pairs(
        nodeid="t",
        test="t",
        trick="x",
        profile_id="p",
        key="k",
        pairs=table,
        tolerance=gate.tolerance,
        confidence=gate.confidence,
        first_look=gate.first_look,
        max_pairs=gate.max_pairs,
    )


def simulate_job(rng: random.Random, noise: Noise, change: float, gate: Gate, key: str) -> "tuple[str, int]":
    """One job of pairs as the plugin runs it, in a session of its own: (verdict, pairs taken)."""
    sd = noise.sd_median * math.exp(rng.gauss(0.0, noise.sd_spread))
    slope = rng.gauss(noise.drift, noise.drift_sd)
    shared, own = math.sqrt(noise.rho), math.sqrt(1.0 - noise.rho)
    table: list = []
    for index in range(gate.max_pairs):
        base_first = first_arm(0, key, index) == "base"
        u = rng.gauss(0.0, 1.0)
        slots = (2 * index, 2 * index + 1) if base_first else (2 * index + 1, 2 * index)
        base = math.exp(slope * slots[0] + sd * (shared * u + own * rng.gauss(0.0, 1.0)))
        head = math.exp(change + slope * slots[1] + sd * (shared * u + own * rng.gauss(0.0, 1.0)))
        table.append(
            {
                "pair": index + 1,
                "order": "base-head" if base_first else "head-base",
                "base_img_per_sec": base,
                "head_img_per_sec": head,
                "ratio": head / base,
            }
        )
        v = _decide(table, gate)
        if v.comparison.decided:
            break
    return v.status, len(table)


@dataclass(frozen=True)
class Rates:
    """Shares of simulated jobs per verdict, and the pairs they took."""

    regression: float
    ok: float
    inconclusive: float
    improvement: float
    pairs_mean: float
    pairs_median: float
    pairs_p90: float
    pairs_max: int


@lru_cache(maxsize=None)
def rates(noise: Noise, change_pct: float, gate: Gate, jobs: int = JOBS, seed: int = SEED) -> Rates:
    """What ``jobs`` simulated jobs at ``change_pct`` give under ``gate`` (seeded)."""
    rng = random.Random(f"{seed}:{change_pct}:{gate}")
    out = [simulate_job(rng, noise, math.log1p(change_pct / 100.0), gate, f"job{k}") for k in range(jobs)]
    pairs = sorted(p for _s, p in out)
    share = {k: sum(s == k for s, _p in out) / jobs for k in ("regression", "ok", "inconclusive", "improvement")}
    return Rates(
        share["regression"],
        share["ok"],
        share["inconclusive"],
        share["improvement"],
        statistics.mean(pairs),
        statistics.median(pairs),
        pairs[int(0.9 * (jobs - 1))],
        pairs[-1],
    )


# -- real sessions -----------------------------------------------------------------------------
def replay(session: Session, gate: Gate) -> "tuple[str, int] | None":
    """The verdict ``gate`` reaches on the session's own pairs, and after how many; None when the session
    stopped before the replay could decide (it took fewer pairs than this gate would)."""
    table: list = []
    valid = 0
    for row in session.table:
        table.append(row)
        valid += row.get("ratio") is not None and not row.get("dropped")
        v = _decide(table, gate)
        if v.comparison.decided or valid >= gate.max_pairs:
            return v.status, valid
    return None


def clopper_pearson(k: int, n: int, level: float = 0.95) -> "tuple[float, float]":
    """Exact two-sided ``level`` interval of a binomial share ``k / n`` (Clopper and Pearson 1934)."""
    a = (1.0 - level) / 2.0

    def quantile(p: float, x: float, y: float) -> float:  # of Beta(x, y), by bisection on I_z(x, y)
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2.0
            lo, hi = (mid, hi) if _regularized_incomplete_beta(x, y, mid) < p else (lo, mid)
        return (lo + hi) / 2.0

    low = 0.0 if k == 0 else quantile(a, k, n - k + 1)
    high = 1.0 if k == n else quantile(1.0 - a, k + 1, n - k)
    return low, high


def _share(k: int, n: int) -> str:
    if n == 0:
        return "-"
    low, high = clopper_pearson(k, n)
    return f"{k}/{n} ({100 * low:.0f}-{100 * high:.0f}%)"


# -- tables ------------------------------------------------------------------------------------
def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def curve_table(sessions: "list[Session]", noise: Noise, gate: Gate) -> "list[str]":
    """The operating curve at ``gate``: real (replayed) beside simulated, with pairs and pytest time per job."""
    by_change: "dict[float, list[Session]]" = {}
    for s in sessions:
        by_change.setdefault(target(s.kind), []).append(s)
    rows = [
        "| true change | real sessions: regression | ok | inconclusive | pairs, median (max) | pytest time, "
        "median (max) | simulated: regression | ok | inconclusive | pairs, mean (90th pct) | pytest time, "
        "median (90th pct, max) |",
        "|---|---|---|---|---|---|---:|---:|---:|---|---|",
    ]
    changes = sorted(set(CURVE) | set(by_change), reverse=True)
    for change in changes:
        r = rates(noise, change, gate)
        per_pair = 2 * noise.seconds_per_run

        def t(pairs: float, per_pair: float = per_pair) -> float:
            return noise.seconds_fixed + per_pair * pairs

        sim = (
            f"{_pct(r.regression)} | {_pct(r.ok)} | {_pct(r.inconclusive)} | {r.pairs_mean:.1f} ({r.pairs_p90}) | "
            f"{_minutes(t(r.pairs_median))} ({_minutes(t(r.pairs_p90))}, {_minutes(t(r.pairs_max))})"
        )
        real = by_change.get(change, [])
        replays = [x for x in (replay(s, gate) for s in real) if x is not None]
        n = len(replays)
        if real:
            counts = {k: sum(v == k for v, _p in replays) for k in ("regression", "ok", "inconclusive")}
            pairs = sorted(p for _v, p in replays)
            left = f" ({len(real) - n} stopped too early to replay)" if n < len(real) else ""
            own = [s.seconds for s in real]
            cells = (
                f"{_share(counts['regression'], n)}{left} | {_share(counts['ok'], n)} | "
                f"{_share(counts['inconclusive'], n)} | "
                f"{f'{statistics.median(pairs):g} ({pairs[-1]})' if pairs else '-'} | "
                f"{_minutes(statistics.median(own))} ({_minutes(max(own))})"
            )
        else:
            cells = "- | - | - | - | -"
        name = "unchanged" if change == 0 else f"{change:+g}%"
        if real:
            measured = [f[0] for f in (_fit_session(s.table) for s in real) if f is not None]
            if measured and change != 0:
                name += f" (measured {100 * math.expm1(statistics.median(measured)):+.1f}%)"
        rows.append(f"| {name} | {cells} | {sim} |")
    return rows


def tolerance_table(sessions: "list[Session]", noise: Noise, gate: Gate) -> "list[str]":
    """Unchanged code per tolerance: false alarms and inconclusive, real (replayed) and simulated."""
    aa = [s for s in sessions if s.kind == "aa"]
    rows = [
        "| tolerance | real A/A: regression | inconclusive | simulated A/A: regression | inconclusive | pairs, mean |",
        "|---:|---|---|---:|---:|---:|",
    ]
    for tol in TOLERANCES:
        g = Gate(tolerance=tol, confidence=gate.confidence, max_pairs=gate.max_pairs, first_look=gate.first_look)
        replays = [x for x in (replay(s, g) for s in aa) if x is not None]
        n = len(replays)
        reg = sum(v == "regression" for v, _p in replays)
        inc = sum(v == "inconclusive" for v, _p in replays)
        left = f" ({len(aa) - n} too short)" if n < len(aa) else ""
        r = rates(noise, 0.0, g)
        rows.append(
            f"| {100 * tol:g}% | {_share(reg, n)}{left} | {_share(inc, n)} | {_pct(r.regression)} | "
            f"{_pct(r.inconclusive)} | {r.pairs_mean:.1f} |"
        )
    return rows


def design_table(noise: Noise, gate: Gate) -> "list[str]":
    """What ``max_pairs`` buys at the fitted noise and at noisier ones: a drop of the tolerance caught, the
    time unchanged code takes (the common case), the longest job."""
    rows = [
        "| run noise | max_pairs | -10%: regression | inconclusive | unchanged: inconclusive | unchanged: "
        "pytest time, median | longest job |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    per_pair = 2 * noise.seconds_per_run
    for scale in NOISIER:
        n = replace(noise, sd_median=noise.sd_median * scale)
        for mp in MAX_PAIRS:
            g = replace(gate, max_pairs=mp)
            drop, aa = rates(n, 100.0 * -gate.tolerance, g), rates(n, 0.0, g)
            rows.append(
                f"| {100 * n.sd_median:.1f}%{' (fitted)' if scale == 1.0 else ''} | {mp} | "
                f"{_pct(drop.regression)} | {_pct(drop.inconclusive)} | {_pct(aa.inconclusive)} | "
                f"{_minutes(noise.seconds_fixed + per_pair * aa.pairs_median)} | "
                f"{_minutes(noise.seconds_fixed + per_pair * mp)} |"
            )
    return rows


def split_line(sessions: "list[Session]") -> str:
    """How a run's noise splits between its steps and the run itself (where the data hold step times)."""
    within, between, count = [], [], 0
    for s in sessions:
        for steps in s.steps:
            logs = [math.log(x) for x in steps[2:] if x > 0]
            if len(logs) >= 4:
                within.append(statistics.variance(logs) / len(logs))
                count += 1
    if count < 6:
        return (
            "The data hold no step times: the split of noise between steps and runs is not measured "
            "(scripts/pair_sessions.py records them)."
        )
    for fitted in (_fit_session(s.table) for s in sessions):
        if fitted is not None:
            between.append(sum(b * b + h * h for b, h in fitted[3]) / fitted[2])
    run_var = statistics.mean(between)
    step_var = statistics.mean(within)
    return (
        f"Noise of a run (SD of log img/s around its session's line) {100 * math.sqrt(run_var):.1f}%, of "
        f"which the steps' own scatter explains {100 * math.sqrt(step_var):.1f}% "
        f"({100 * step_var / run_var:.0f}% of the variance; {count} runs): the rest comes with each run "
        f"and does not shrink with more steps."
    )


def render(sessions: "list[Session]", source: str, section: "str | None" = None) -> str:
    """The block of docs/method.md between the markers (of ``section``'s, when given)."""
    start, end = markers(section)
    noise = fit(sessions)
    gate = Gate()
    kinds = sorted({s.kind for s in sessions})
    lines = [
        start,
        "",
        f"From {len(sessions)} sessions ({', '.join(f'{sum(s.kind == k for s in sessions)} {k}' for k in kinds)}) "
        f"in `{source}`. Fitted noise: a run's SD of log img/s {100 * noise.sd_median:.1f}% (median over "
        f"sessions; between sessions x/÷ {math.exp(noise.sd_spread):.2f}), correlation of the two runs of a pair "
        f"{noise.rho:.2f}, drift {100 * noise.drift:+.2f}% per run (SD {100 * noise.drift_sd:.2f}% between "
        f"sessions); a session costs {noise.seconds_fixed:.0f} s plus {noise.seconds_per_run:.1f} s per run. "
        f"Simulated: {JOBS} jobs per row (seed {SEED}), each in a session of its own drawn from that model, "
        "through the plugin's decision and stopping rule. Real: each session replayed with today's decision "
        "on the pairs it took (95% intervals, Clopper-Pearson).",
        "",
        f"At the defaults (tolerance {100 * gate.tolerance:g}%, confidence {100 * gate.confidence:g}%, "
        f"max_pairs {gate.max_pairs}, first look after {gate.first_look} pairs):",
        "",
    ]
    lines += curve_table(sessions, noise, gate)
    lines += ["", "Unchanged code (A/A) per tolerance, other settings at the defaults:", ""]
    lines += tolerance_table(sessions, noise, gate)
    lines += ["", "What `max_pairs` buys (simulated; noisier: the fitted model with a larger run noise):", ""]
    lines += design_table(noise, gate)
    lines += ["", split_line(sessions), "", end]
    return "\n".join(lines)


def spliced(text: str, block: str, section: "str | None" = None) -> str:
    """``text`` with the block between the markers replaced (the markers must be there, once)."""
    start, end = markers(section)
    if text.count(start) != 1 or text.count(end) != 1:
        raise SystemExit(f"{PAGE}: expected the markers {start!r} and {end!r} once each")
    head, rest = text.split(start, 1)
    _old, tail = rest.split(end, 1)
    return head + block + tail


def main(argv: "list[str] | None" = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(DATA), help="sessions (default: %(default)s)")
    p.add_argument("--section", default=None, help="the block of another campaign (its own markers in the page)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--write", action="store_true", help=f"splice the tables into {PAGE.relative_to(ROOT)}")
    what.add_argument("--check", action="store_true", help="exit 1 unless the page holds them")
    args = p.parse_args(argv)
    path = Path(args.data)
    source = str(path.resolve().relative_to(ROOT)) if path.resolve().is_relative_to(ROOT) else path.name
    block = render(load(path), source, args.section)
    if not (args.write or args.check):
        print(block)
        return 0
    text = PAGE.read_text(encoding="utf-8")
    new = spliced(text, block, args.section)
    if args.check:
        if new != text:
            print(
                f"stale tables in {PAGE}: run python scripts/method_tables.py --data {args.data} --write",
                file=sys.stderr,
            )
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    print(f"wrote the tables into {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
