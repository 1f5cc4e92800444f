"""eval/fit_abstention.py: the threshold rules and the cross-validated choice of signals, on rows whose
answer is known (one signal separates answerable from unanswerable questions, the others are noise)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "eval" / "fit_abstention.py"


@pytest.fixture(scope="module")
def fa():
    spec = importlib.util.spec_from_file_location("fit_abstention", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows(n: int = 120, seed: int = 7) -> list[dict]:
    rng = np.random.RandomState(seed)
    out = []
    for i in range(n):
        answerable = i % 5 != 0  # one in five unanswerable, as in the golden set
        signals = {name: float(rng.rand()) for name in ("top_final", "margin", "top_similarity", "sentence_similarity",
                                                        "term_coverage", "unknown_share", "leg_agreement", "top_bm25",
                                                        "rarest_missing", "passage_coverage")}
        # the names a question mentions are missing from the passages of the unanswerable ones (with overlap)
        signals["names_missing"] = float(rng.uniform(0.4, 1.0) if not answerable else rng.uniform(0.0, 0.6))
        out.append({"id": str(i), "split": "dev", "answerable": answerable, "signals": signals})
    return out


def test_max_wrong_caps_the_wrong_abstentions_on_the_fitted_split(fa):
    p = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9, 0.95])
    y = np.array([0, 0, 1, 0, 1, 1, 1, 1], dtype=float)
    t = fa.pick_threshold(p, y, 0.0)  # no answerable question may be refused: abstain below 0.3 at most
    abstained, answered = fa.rates(p, y, t)
    assert answered == 1.0 and abstained == pytest.approx(2 / 3)
    looser = fa.pick_threshold(p, y, 0.2)  # one of five answerable may be refused: the 0.6 one goes too
    assert fa.rates(p, y, looser) == (pytest.approx(1.0), pytest.approx(0.8))


def test_cross_validation_finds_the_signal_that_separates(fa):
    dev = rows()
    chosen = fa.choose_signals(dev, 0.1, fa.SIGNALS)
    assert "names_missing" in chosen
    abstained, wrong = fa.cross_validate(dev, ["names_missing"], 0.1)
    noise_abstained, _ = fa.cross_validate(dev, ["top_final"], 0.1)
    assert abstained > 0.5 > noise_abstained and wrong <= 0.2
    # --portable keeps to the signals that read words: a cosine signal is never chosen
    portable = fa.choose_signals(dev, 0.1, fa.PORTABLE_SIGNALS)
    assert set(portable) <= set(fa.PORTABLE_SIGNALS) and "names_missing" in portable
