"""Content guards for indexed text: prompt-injection signals (secret masking is rag/secrets.py).

`assess_injection` only *flags*; retrieval decides what to do with a risky chunk (ranking lowers
it; the extractive answer never quotes a flagged sentence). The patterns target phrasing addressed
to a model ("ignore all previous instructions", "act as an unrestricted AI", "reveal your system
prompt", chat-template role markers, tool-call JSON, and the override phrasing in German, French,
Spanish, Italian and Portuguese), not ordinary prose about ignoring things or running commands:
tests/ingest/test_guard.py runs every sentence of a real vault through them and expects no flag.

"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# --- prompt injection -------------------------------------------------------------------------

_I = re.IGNORECASE | re.MULTILINE
_PRIOR = r"(?:previous|prior|above|earlier|preceding|foregoing|original|initial)"
_RULES = r"(?:instructions?|prompts?|directions?|directives?|rules|messages?|context|guidelines|guidance|guardrails)"
_POSSESSIVE = r"(?:your|the\s+system(?:'s)?|its|the\s+assistant's|any|all\s+(?:of\s+)?(?:your|the))"

_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "policy_override_attempt": tuple(re.compile(p, _I) for p in (
        rf"\b(?:ignore|disregard|forget|skip|bypass|override)\s+(?:(?:all|any|the|your|my|these|those|of)\s+)*{_PRIOR}\s+{_RULES}",
        rf"\b(?:ignore|disregard|forget|bypass|override)\s+{_POSSESSIVE}\s+(?:{_RULES}|programming|training|safety\s+\w+|restrictions)",
        r"\b(?:ignore|disregard|forget|reveal|print|show)\s+(?:(?:the|your)\s+)?system\s+(?:prompt|message|instructions)",
        r"\byou\s+are\s+now\s+(?:a|an|the|my|no\s+longer|in\s+\w+\s+mode|dan|free|unrestricted|jailbroken|unfiltered)\b",
        r"\bfrom\s+now\s+on,?\s+you\s+(?:will|must|are|should|shall)\b",
        r"\bnew\s+(?:system\s+)?instructions\s*:|\byour\s+new\s+instructions?\s*(?:is\b|are\b|:)",
        r"\b(?:developer|god|jailbreak|dan)\s+mode\s+(?:enabled|activated|on)\b"
        r"|\b(?:enter|enable|activate|switch\s+(?:in)?to)\s+(?:developer|god|jailbreak|dan|unrestricted)\s+mode\b",
        # "ignore the above and ...", "forget everything above", "forget everything you were told"
        r"\b(?:ignore|disregard|forget)\s+(?:(?:all\s+(?:of\s+)?|everything\s+|anything\s+)?(?:the\s+|that\s+is\s+)?"
        r"(?:above|before\s+this)\s*(?:[.,;:!]|and\b|$)|everything\s+(?:you\s+(?:were|have\s+been)\s+told|said|"
        r"written|so\s+far)\b)",
        # a new identity without limits: "act as an unrestricted AI", "pretend you are an AI without rules"
        r"\b(?:act|behave|respond)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:an?\s+)?(?:dan\b|(?:unrestricted|unfiltered|"
        r"uncensored|jailbroken|evil|rogue|different)\s+(?:ai|assistant|model|chatbot|llm)\b|(?:ai|assistant|chatbot|"
        r"language\s+model|llm)\s+(?:with\s+no|without|that\s+(?:has\s+no|ignores))\b)",
        r"\bpretend\s+(?:that\s+)?(?:you\s+(?:are|were)|to\s+be)\s+(?:an?\s+)?(?:dan\b|(?:unrestricted|unfiltered|"
        r"uncensored|jailbroken|evil)\b|(?:ai|assistant|chatbot|language\s+model|llm)\b)",
        # asking for what the model was told: "print your instructions", "reveal your hidden prompt"
        r"\b(?:reveal|print|show|repeat|output|display|leak|dump)\s+(?:me\s+)?(?:your|the\s+(?:hidden|secret|initial|"
        r"original))\s+(?:(?:full|entire|exact|original|initial|hidden|secret)\s+)*(?:system\s+)?(?:prompt|instructions|"
        r"system\s+message)\b",
        # issue 47: "new system prompt", "new instructions from the administrator", "ignore the rules
        # above", "override safety policy"
        r"\bnew\s+system\s+prompt\b|\bnew\s+instructions?\s+from\s+(?:the\s+|your\s+)?(?:system\s+)?"
        r"(?:administrator|admin|developer|operator|owner|system)\b",
        rf"\b(?:ignore|disregard|forget)\s+(?:(?:all|any|the|your|these|those|of)\s+)*{_RULES}\s+(?:above|before|"
        r"so\s+far|(?:you\s+(?:were|have\s+been)\s+)?given\s+(?:above|before|earlier|so\s+far))\b",
        r"\b(?:override|bypass|disable|ignore|disregard)\s+(?:the\s+|your\s+|all\s+|any\s+)?(?:safety|content|"
        r"security)\s+(?:polic(?:y|ies)|rules|filters?|guidelines|guardrails|restrictions|measures)\b",
        # the override in other languages: German, French, Spanish, Italian, Portuguese
        "|".join((
            r"\b(?:ignorier(?:e|en|t)?|vergiss|vergessen\s+sie)\s+(?:bitte\s+)?(?:alle\s+|die\s+)*(?:vorherigen|"
            r"bisherigen|obigen|vorangegangenen|fr\u00fcheren|vorigen)\s+(?:anweisungen|instruktionen|befehle|regeln|"
            r"vorgaben)\b",
            r"\b(?:ignore[rz]?|oublie[rz]?)\s+(?:toutes\s+)?(?:les\s+|vos\s+|tes\s+)?(?:instructions|consignes|"
            r"directives|r\u00e8gles)\s+(?:pr\u00e9c\u00e9dentes|ant\u00e9rieures|ci-dessus|d'avant)",
            r"\b(?:ignora|ignore|ignorar|olvida|olvide|olvidar)\s+(?:todas\s+)?(?:las\s+|tus\s+|sus\s+)?"
            r"(?:instrucciones|indicaciones|\u00f3rdenes|reglas)\s+(?:anteriores|previas)\b",
            r"\b(?:ignora|ignorare|dimentica|dimenticare)\s+(?:tutte\s+)?(?:le\s+)?(?:istruzioni|indicazioni|regole)\s+"
            r"(?:precedenti|di\s+prima)\b",
            r"\b(?:ignore|ignora|ignorar|esque\u00e7a|esquece)\s+(?:todas\s+)?(?:as\s+)?(?:instru\u00e7\u00f5es|regras|"
            r"orienta\u00e7\u00f5es)\s+(?:anteriores|pr\u00e9vias)\b",
        )),
    )),
    "tool_call_attempt": tuple(re.compile(p, _I) for p in (
        r"\b(?:call|invoke|trigger)\s+the\s+(?:[\w-]+\s+)?(?:tool|function)\b",
        r"\bexecute\s+(?:the\s+)?(?:following|this|these)\s+(?:shell\s+)?(?:commands?|code|scripts?)\b",
        r"\{\s*\"(?:name|function|tool|tool_name)\"\s*:\s*\"[^\"]*\"\s*,\s*\"(?:arguments|parameters|args|input)\"\s*:",
        r"<\s*(?:tool_call|tool_use|function_call|function_calls|invoke)\b[^>]*>",  # opening tags only
        r"\b(?:run|execute)\s+[`'\"]?\s*(?:sudo\s+)?(?:rm\s+-[rf]{2}|curl\s[^\n]*\|\s*(?:ba|z)?sh\b|mkfs|dd\s+if=)",
    )),
    "instruction_like": tuple(re.compile(p, _I) for p in (
        r"\bas\s+an?\s+(?:ai|a\.i\.|large\s+language\s+model|language\s+model|llm|ai\s+assistant|chatbot)\b",
        r"^\s*(?:#+\s*)?(?:assistant|system)\s*:\s*(?:you\b|your\b|ignore\b|override\b|bypass\b|always\b|never\b|do\s+not\b|"
        r"don't\b|respond\b|answer\b|reply\b|from\s+now\b|sure\b|i\s+will\b)",
        r"<\|im_start\|>|<\|(?:system|assistant)\|>|\[/?INST\]|<<SYS>>",
        r"\b(?:respond|reply|answer|output)\s+only\s+(?:with|in|using)\b",
        r"\b(?:do\s+not|don't|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|reveal\s+(?:this\s+)?to|let)\s+the\s+user\b",
        r"\bwithout\s+telling\s+the\s+user\b",
        r"\b(?:if\s+you\s+are|dear|attention|note\s+to\s+(?:the\s+)?)\s*(?:an?\s+)?(?:ai|llm|language\s+model|assistant|chatbot)\b"
        r"(?:\s+(?:reading|processing|summari[sz]ing)\s+this)?\s*[,:]",
        # issue 47: a closing tag that ends the prompt's context, a reply put in the assistant's
        # mouth, a claim to be the one who sets the rules
        r"<\s*/\s*(?:context|system|instructions?|prompt|documents?|sources?|user|assistant|notes)\s*>",
        r"^\s*(?:#+\s*)?assistant\s*:\s*\S",
        r"\bI\s*(?:'m|\s+am)\s+(?:the|your)\s+(?:system\s+)?(?:administrator|admin|developer|operator)\b",
    )),
}

# For each pattern above (same order), literals of which every match contains at least one, in
# lower case. A substring test on the lower-cased text rules a pattern out far faster than running
# it (the guard was a third of the indexer's Python time), and exactly: a pattern none of whose
# literals occur cannot match. IGNORECASE also matches "ı", "İ" and "ſ" to ASCII letters, which
# str.lower() does not map to them, so text holding one of those runs every pattern.
_LITERALS: dict[str, tuple[tuple[str, ...], ...]] = {
    "policy_override_attempt": (
        ("ignore", "disregard", "forget", "skip", "bypass", "override"),
        ("ignore", "disregard", "forget", "bypass", "override"),
        ("system",),
        ("now",),
        ("now",),
        ("instruction",),
        ("mode",),
        ("ignore", "disregard", "forget"),
        ("act", "behave", "respond"),
        ("pretend",),
        ("prompt", "instructions", "message"),
        ("prompt", "instruction"),
        ("ignore", "disregard", "forget"),
        ("safety", "content", "security"),
        # a word every language's match holds: its nouns (German, Spanish, Italian, Portuguese), or
        # French's closing word (its nouns are English words too)
        ("anweisungen", "instruktionen", "befehle", "regeln", "vorgaben", "pr\u00e9c\u00e9dentes", "ant\u00e9rieures",
         "ci-dessus", "d'avant", "instrucciones", "indicaciones", "\u00f3rdenes", "reglas", "istruzioni", "indicazioni",
         "regole", "instru\u00e7\u00f5es", "regras", "orienta\u00e7\u00f5es"),
    ),
    "tool_call_attempt": (
        ("tool", "function"),
        ("execute",),
        ("{",),
        ("<",),
        ("rm", "curl", "mkfs", "if="),
    ),
    "instruction_like": (
        ("ai", "a.i.", "language", "llm", "chatbot"),
        ("assistant", "system"),
        ("<|", "[inst]", "[/inst]", "<<sys>>"),
        ("only",),
        ("user",),
        ("telling",),
        ("ai", "llm", "language", "assistant", "chatbot"),
        ("context", "system", "instruction", "prompt", "document", "source", "user", "assistant", "notes"),
        ("assistant",),
        ("administrator", "admin", "developer", "operator"),
    ),
}
_RULES_WITH_LITERALS: dict[str, tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]] = {
    flag: tuple(zip(patterns, _LITERALS[flag], strict=True)) for flag, patterns in _PATTERNS.items()
}
_UNLOWERED_CASE_VARIANTS = ("\u0130", "\u0131", "\u017f")  # İ ı ſ

# Risk = 1 - prod((1 - weight) ** hits) over flags: one weak hint stays low, an override attempt
# alone is already high, and independent signals compound. Hits per flag are capped so a
# page quoting one phrase many times does not saturate by repetition alone.
RISK_WEIGHTS: dict[str, float] = {"policy_override_attempt": 0.6, "tool_call_attempt": 0.5, "instruction_like": 0.2}
_MAX_HITS_PER_FLAG = 3
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


@dataclass(frozen=True)
class RiskAssessment:
    flags: tuple[str, ...]  # in the order of RISK_WEIGHTS
    risk_score: float  # in [0, 1], rounded to 4 decimals


def assess_injection(text: str) -> RiskAssessment:
    normalised = _normalise(text)
    lowered = None if any(c in normalised for c in _UNLOWERED_CASE_VARIANTS) else normalised.lower()
    flags: list[str] = []
    keep = 1.0
    for flag, rules in _RULES_WITH_LITERALS.items():
        patterns = tuple(p for p, literals in rules if lowered is None or any(w in lowered for w in literals))
        hits = _distinct_hits(normalised, patterns) if patterns else 0
        if hits:
            flags.append(flag)
            keep *= (1.0 - RISK_WEIGHTS[flag]) ** min(hits, _MAX_HITS_PER_FLAG)
    score = min(1.0, max(0.0, 1.0 - keep))
    return RiskAssessment(tuple(flags), round(score, 4))


def _distinct_hits(text: str, patterns: tuple[re.Pattern[str], ...]) -> int:
    """Matches counted once per stretch of text, so two patterns on one phrase are one hit."""
    spans = sorted(m.span() for p in patterns for m in p.finditer(text))
    hits, reach = 0, -1
    for start, end in spans:
        if start >= reach:
            hits += 1
        reach = max(reach, end)
    return hits


def _normalise(text: str) -> str:
    # Fullwidth letters, zero-width joiners and markdown emphasis are cheap ways to dodge a regex.
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH)
    return text.replace("*", "").replace("\u2019", "'")
