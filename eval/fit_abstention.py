"""Fit the notes abstention (rag.notes.signals) on the golden set's dev split; report dev and test.

    RAGPG_DATA_DIR=... python eval/fit_abstention.py eval/golden/obsidian-help.yaml [--vault help]

Runs `ask` (debug) on every case, reads the abstention signals each answer was decided on,
fits a logistic regression (L2, Newton steps) on the dev cases only — label: the case is
answerable — and picks the threshold on dev that maximises
`abstained on unanswerable + answer_cost * answered when answerable` (answer_cost > 1: wrongly
abstaining on a question the notes answer costs the user more than quoting a near miss), or with
`--max-wrong W` the one that abstains most while wrongly abstaining on at most W of dev's
answerable cases. `--cv` chooses the signals: every subset of up to three, by 5-fold
cross-validation on dev (threshold picked inside each training fold by the same rule); with
`--portable`, only among the signals that read words, not the embedder's cosines. The
test split is only scored, never fitted. Prints the weights to paste into
rag/config_notes.py (ABSTAIN_WEIGHTS, ABSTAIN_BIAS, ABSTAIN_THRESHOLD) and the figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import numpy as np  # noqa: E402

from rag.config import load_settings  # noqa: E402
from rag.eval import load_golden  # noqa: E402
from rag.notes.ask import ask  # noqa: E402
from rag.notes.signals import PORTABLE_SIGNALS, SIGNALS  # noqa: E402
from rag.runtime import Runtime  # noqa: E402

L2 = 0.1
ANSWER_COST = 1.5
CV_FOLDS = 5
CV_MAX_SIGNALS = 3
SENTENCE_WEIGHT_TO_READ = 1e-12


def collect(golden_path: str, vaults: list[str]) -> list[dict]:
    settings = load_settings()
    # sentence_similarity is read only when it weighs something: a weight too small to change any decision
    weights = {"sentence_similarity": SENTENCE_WEIGHT_TO_READ, **settings.notes.abstain_weights}
    settings = settings.model_copy(update={"notes": settings.notes.model_copy(update={"abstain_weights": weights})})
    rt = Runtime.from_settings(settings, pool_max_size=2)
    rows = []
    try:
        for case in load_golden(golden_path).cases:
            resp = ask(case.query, vaults=list(case.vaults) or vaults or None, folders=list(case.folders),
                       debug=True, runtime=rt)
            signals = resp.decision.signals or None
            rows.append({"id": case.id, "split": case.split, "answerable": not case.expect_abstain,
                         "signals": signals})
    finally:
        rt.close()
    return rows


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Logistic regression with an unpenalised bias (column 0), Newton-Raphson."""
    w = np.zeros(x.shape[1])
    penalty = np.eye(x.shape[1]) * L2
    penalty[0, 0] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) + penalty @ w
        hess = (x.T * (p * (1 - p))) @ x + penalty
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def rates(p: np.ndarray, y: np.ndarray, threshold: float) -> tuple[float, float]:
    abstain = p < threshold
    unans, ans = y == 0, y == 1
    return float(abstain[unans].mean()) if unans.any() else 1.0, float((~abstain[ans]).mean()) if ans.any() else 1.0


def matrix(rows: list[dict], names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    usable = [r for r in rows if r["signals"]]
    x = np.array([[1.0, *(r["signals"][name] for name in names)] for r in usable])
    y = np.array([1.0 if r["answerable"] else 0.0 for r in usable])
    return x, y


def pick_threshold(p: np.ndarray, y: np.ndarray, max_wrong: float | None) -> float:
    thresholds = list(np.linspace(0.05, 0.95, 91))
    if max_wrong is not None:
        allowed = [t for t in thresholds if 1 - rates(p, y, t)[1] <= max_wrong + 1e-12] or [thresholds[0]]
        return float(max(allowed, key=lambda t: (rates(p, y, t)[0], -t)))
    return float(max(thresholds, key=lambda t: (sum(np.array(rates(p, y, t)) * [1.0, ANSWER_COST]), -t)))


def cross_validate(dev: list[dict], names: list[str], max_wrong: float | None, seeds: int = 5) -> tuple[float, float]:
    """(abstained on unanswerable, wrongly abstained) of `names` by stratified 5-fold CV on dev,
    averaged over `seeds` shuffles; weights and threshold come from the training folds only."""
    x, y = matrix(dev, names)
    results = []
    for seed in range(seeds):
        rng = np.random.RandomState(seed)
        pos, neg = rng.permutation(np.where(y == 1)[0]), rng.permutation(np.where(y == 0)[0])
        abstain = np.zeros(len(y), dtype=bool)
        for fold in range(CV_FOLDS):
            held = np.concatenate([pos[fold::CV_FOLDS], neg[fold::CV_FOLDS]])
            train = np.setdiff1d(np.arange(len(y)), held)
            w = fit(x[train], y[train])
            t = pick_threshold(1 / (1 + np.exp(-(x[train] @ w))), y[train], max_wrong)
            abstain[held] = 1 / (1 + np.exp(-(x[held] @ w))) < t
        results.append((abstain[y == 0].mean(), abstain[y == 1].mean()))
    return float(np.mean([r[0] for r in results])), float(np.mean([r[1] for r in results]))


def choose_signals(dev: list[dict], max_wrong: float | None, candidates: tuple[str, ...]) -> list[str]:
    scored = []
    for size in range(1, CV_MAX_SIGNALS + 1):
        for names in itertools.combinations(candidates, size):
            abstained, wrong = cross_validate(dev, list(names), max_wrong)
            scored.append((round(abstained + ANSWER_COST * (1 - wrong), 4), abstained, wrong, list(names)))
    scored.sort(key=lambda s: (-s[0], len(s[3])))
    for _score, abstained, wrong, names in scored[:5]:
        print(f"cv: {', '.join(names)}: abstained {abstained:.3f}, wrongly abstained {wrong:.3f}")
    return scored[0][3]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("golden")
    ap.add_argument("--vault", action="append", default=[])
    ap.add_argument("--rows", help="reuse collected rows (JSON) instead of running ask")
    ap.add_argument("--save-rows", help="write the collected rows (JSON)")
    ap.add_argument("--signals", default=",".join(SIGNALS),
                    help="comma-separated signals to fit (the rest weigh 0); default: all")
    ap.add_argument("--max-wrong", type=float, default=None,
                    help="pick the threshold that abstains most on dev while wrongly abstaining on at most this"
                         " share of dev's answerable cases (default: maximise abstained + answer_cost * answered)")
    ap.add_argument("--cv", action="store_true",
                    help="choose the signals by 5-fold cross-validation on dev (every subset of up to three)")
    ap.add_argument("--portable", action="store_true",
                    help="with --cv, only the signals that do not depend on the embedder (PORTABLE_SIGNALS)")
    args = ap.parse_args()
    rows = json.load(open(args.rows)) if args.rows else collect(args.golden, args.vault)
    if args.save_rows:
        json.dump(rows, open(args.save_rows, "w"), indent=1)
    dev = [r for r in rows if r["split"] == "dev"]
    test = [r for r in rows if r["split"] == "test"]
    names = [n for n in args.signals.split(",") if n]
    unknown = [n for n in names if n not in SIGNALS]
    if unknown:
        ap.error(f"unknown signal {unknown[0]!r} (known: {', '.join(SIGNALS)})")
    if args.cv:
        names = choose_signals(dev, args.max_wrong, PORTABLE_SIGNALS if args.portable else SIGNALS)
    xd, yd = matrix(dev, names)
    w = fit(xd, yd)
    best = pick_threshold(1 / (1 + np.exp(-(xd @ w))), yd, args.max_wrong)
    print("ABSTAIN_WEIGHTS =", {name: round(float(v), 3) for name, v in zip(names, w[1:], strict=True)})
    print("ABSTAIN_BIAS =", round(float(w[0]), 3))
    print("ABSTAIN_THRESHOLD =", round(float(best), 2))
    for name, part in (("dev", dev), ("test", test)):
        x, y = matrix(part, names)
        if not len(y):
            continue
        p = 1 / (1 + np.exp(-(x @ w)))
        abstained, answered = rates(p, y, best)
        no_result = sum(1 for r in part if not r["signals"])
        print(f"{name}: {len(part)} cases ({int((y == 0).sum())} unanswerable, {no_result} without results):"
              f" abstained on unanswerable {abstained:.3f}, wrongly abstained {1 - answered:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
