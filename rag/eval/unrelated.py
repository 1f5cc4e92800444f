"""`ragpg eval --unrelated-vault NAME`: the same cases again with an unrelated vault searched too.

A question's decision is judged within the vault its evidence comes from (`rag.notes.decision`), so
a vault of other material registered beside the notes should change no decision: the run reports
the answer metrics with it and the cases whose abstention changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag.eval.results import EvalReport


@dataclass(frozen=True)
class UnrelatedRun:
    vault: str
    report: EvalReport

    def changed(self, alone: EvalReport) -> list[str]:
        """Ids of the cases that abstained in one run and not in the other."""
        before = {r.case.id: r.abstained for r in alone.results}
        return [r.case.id for r in self.report.results if before.get(r.case.id) != r.abstained]

    def to_json(self, alone: EvalReport) -> dict[str, Any]:
        return {"vault": self.vault, "metrics": dict(self.report.summary.metrics),
                "changed_decisions": self.changed(alone)}

    def text(self, alone: EvalReport) -> str:
        now, was = self.report.summary.metrics, alone.summary.metrics
        shown = ", ".join(f"{m} {now[m]:.3f} (alone {was[m]:.3f})" for m in sorted(now)
                          if m in was and m in _SHOWN)
        changed = self.changed(alone)
        return (f"With vault '{self.vault}' also searched: {shown}; abstention changed on {len(changed)} case(s)"
                + (f": {', '.join(changed)}" if changed else "") + "\n")


_SHOWN = frozenset({"abstain_on_unanswerable", "answered_when_answerable", "answer_fact", "recall@5"})
