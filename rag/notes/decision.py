"""The one answer/abstain decision of notes `ask`: named signals, the rule that decided, plain-words reasons.

The evidence is judged within the vault it comes from (the vault of the best passage): the term
statistics are that vault's own and the signals read only that vault's passages, so registering,
indexing or removing an unrelated vault changes no decision about a question answered elsewhere.

Rules, in order (the first that applies decides):

1. `nothing_found` — no passage matched;
2. `names_missing` — the question asks about a name or number (`rag.notes.question.asked_names`)
   that none of the evidence vault's best passages mention: the notes say something about the topic,
   not about that thing ("Your notes mention two-factor authentication but not YubiKey");
3. `model` — the calibrated model over the signals (`rag.notes.signals`).

The answer step can still turn an answer into an abstention: `llm_declined` (the model said the
passages do not answer) and `only_flagged_text` (every sentence to quote is flagged as an
instruction to a model); `overruled` records it on the same decision.

The record (`AnswerDecision`) is what `--explain`, `--json`, the web page's "Why this answer", MCP
and the trace all render; `VERDICTS` is the one table of how each rule is said, and the reasons
never contradict the outcome: a signal that points the other way is named only together with what
outweighed it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.config import NotesSettings
from rag.notes.evidence import evidence_vault, in_vault
from rag.notes.question import Question
from rag.notes.results import AnswerDecision, RuleName
from rag.notes.signals import AbstainSignals, collect_signals, missing_names, p_answerable, passage_text
from rag.retrieval.terms import TermStat
from rag.text import stem, tokenize
from rag.types import RankedChunk

# When a signal is named as a reason (wording only; the decision is the rule's).
EXPLAIN_UNKNOWN_SHARE_MIN = 0.3
EXPLAIN_COVERAGE_BELOW = 0.5
EXPLAIN_SENTENCE_SIMILARITY_BELOW = 0.45
MENTIONED_SHOWN = 3


def mentioned_terms(terms: Sequence[str], passages: Sequence[str], leave_out: Sequence[str]) -> list[str]:
    """The question's words (`terms`) the passages use (the first few, in the question's order)."""
    stems = {stem(t) for t in tokenize(" ".join(passages))}
    left = {stem(t) for n in leave_out for t in tokenize(n)}
    found = [t for t in terms if stem(t) in stems and stem(t) not in left]
    return found[:MENTIONED_SHOWN]


def no_coverage_message(mentioned: Sequence[str], missing: Sequence[str]) -> str:
    """ "Your notes mention X but not Y." """
    not_found = " or ".join(missing)
    if not mentioned:
        return f"Your notes do not mention {not_found}."
    return f"Your notes mention {', '.join(mentioned)} but not {not_found}."


def decide_answer(q: Question, ranked: Sequence[RankedChunk], stats: Sequence[TermStat],
                  sentence_similarity: float | None, ns: NotesSettings) -> AnswerDecision:
    """The decision for the question over its ranked passages; `stats` are the evidence vault's term statistics."""
    vault = evidence_vault(ranked)
    if vault is None:
        return AnswerDecision(abstain=True, rule="nothing_found", evidence_vault=None,
                              reasons=[VERDICTS["nothing_found"]])
    own = in_vault(ranked, vault)
    names = list(q.names)
    texts = [passage_text(r) for r in own[:ns.names_top_passages]]
    missing = missing_names(names, texts)
    signals = collect_signals(own, stats, sentence_similarity, top_passages=ns.abstain_top_passages, names=names)
    p = p_answerable(signals, ns.abstain_weights, ns.abstain_bias)
    common = {"evidence_vault": vault, "p_answerable": round(p, 6), "threshold": ns.abstain_threshold,
              "signals": signals.as_dict(), "names": names, "names_missing": missing}
    if missing:
        mentioned = mentioned_terms(q.terms, texts, names)
        return AnswerDecision(abstain=True, rule="names_missing", mentioned=mentioned,
                              message=no_coverage_message(mentioned, missing),
                              reasons=[f"the best passages never mention {', '.join(missing)}, which the question "
                                       "asks about"], **common)
    against = _against(signals)
    if p < ns.abstain_threshold:
        return AnswerDecision(abstain=True, rule="model", reasons=against or [
            "the signals together fall short of the threshold"], **common)
    support = _support(signals, names)
    outweighed_by = "; ".join(support) if support else "the other signals together"
    reasons = support + [f"{a} (outweighed by: {outweighed_by})" for a in against]
    return AnswerDecision(abstain=False, rule="model", reasons=reasons, **common)


def _against(s: AbstainSignals) -> list[str]:
    out = []
    if s.unknown_share >= EXPLAIN_UNKNOWN_SHARE_MIN:
        out.append(f"{s.unknown_share:.0%} of the question's distinctive words never appear in the notes")
    if s.term_coverage < EXPLAIN_COVERAGE_BELOW:
        out.append(f"the best passages contain only {s.term_coverage:.0%} of the question's distinctive words")
    if s.sentence_similarity is not None and s.sentence_similarity < EXPLAIN_SENTENCE_SIMILARITY_BELOW:
        out.append("no sentence in the best passages is close in meaning to the question")
    return out


def _support(s: AbstainSignals, names: Sequence[str]) -> list[str]:
    out = []
    if s.term_coverage >= EXPLAIN_COVERAGE_BELOW:
        out.append(f"the best passages contain {s.term_coverage:.0%} of the question's distinctive words")
    if s.sentence_similarity is not None and s.sentence_similarity >= EXPLAIN_SENTENCE_SIMILARITY_BELOW:
        out.append("a sentence of the best passages is close in meaning to the question")
    if names:
        out.append(f"the best passages mention {', '.join(names)}, as the question does")
    return out


# How each rule that abstains is said (the model's verdict carries its numbers: `verdict`).
VERDICTS: dict[RuleName, str] = {
    "nothing_found": "nothing in the notes matched",
    "names_missing": "the notes cover the topic, not the thing asked",
    "llm_declined": "the language model found no answer in the passages",
    "only_flagged_text": "every sentence that matched looks like an instruction to a model, never quoted",
    "model": "the evidence is too weak",
}


def overruled(decision: AnswerDecision, rule: RuleName) -> AnswerDecision:
    """The decision after the answer step abstained although the evidence answered."""
    return decision.model_copy(update={"abstain": True, "rule": rule, "reasons": [VERDICTS[rule]]})


def verdict(d: AnswerDecision) -> str:
    """The decision in one line, with the rule that made it."""
    if d.rule == "names_missing" and d.message:
        return f"not answered: {d.message}"
    if d.rule != "model":
        return f"not answered: {VERDICTS[d.rule]}"
    p, t = d.p_answerable or 0.0, d.threshold or 0.0
    return (f"not answered: {VERDICTS['model']} (confidence {p:.2f} < {t:.2f})" if d.abstain
            else f"answered: the evidence is strong enough (confidence {p:.2f} ≥ {t:.2f})")


def explanation(d: AnswerDecision) -> str:
    """The verdict and its reasons, as `--explain`, the web page and MCP show them."""
    shown = [r for r in d.reasons if r not in verdict(d)]
    return verdict(d) + (" — " + "; ".join(shown) if shown else "")
