"""LLM calls behind one small interface; litellm is the built-in provider.

Every caller treats an LLMError as "no help from the LLM this time" and degrades gracefully;
nothing here is required for ragpg to work.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from rag.config import LLMSettings
from rag.errors import LLMError
from rag.secrets import mask_secrets, mask_url

if TYPE_CHECKING:
    from types import ModuleType

_litellm: ModuleType | None = None
_import_lock = threading.Lock()
# A configured key shorter than this is not looked for in error text (it would match ordinary words).
_MIN_KEY_CHARS = 8


def import_litellm() -> ModuleType:
    """litellm, imported in this one place with its network-free, quiet settings: the bundled model
    cost map instead of a download at import, and no help banner printed on stdout (which a CLI
    answer or JSON output owns) when a call fails. Every caller, LLM or embedder, imports it here."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            litellm.suppress_debug_info = True
            _litellm = litellm
    return _litellm


@dataclass(frozen=True)
class Message:
    role: str
    content: str


class LLM(Protocol):
    model: str

    def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None) -> str: ...


class LiteLLM:
    """Any model litellm knows (`openai/gpt-4o-mini`, `ollama/llama3`, an OpenAI-compatible api_base)."""

    def __init__(self, settings: LLMSettings) -> None:
        assert settings.model
        self.model = settings.model
        self._settings = settings

    def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None) -> str:
        litellm = import_litellm()
        s = self._settings
        payload = [{"role": m.role, "content": mask_secrets(m.content)} for m in messages]
        try:
            response = litellm.completion(
                model=s.model, messages=payload, api_base=s.api_base, api_key=s.api_key,
                timeout=s.timeout_s, num_retries=s.max_retries, temperature=s.temperature,
                max_tokens=max_tokens,
            )
            text = response.choices[0].message.content
        except Exception as exc:  # litellm raises many provider-specific types; all mean "no answer"
            said = mask_url(mask_secrets(str(exc)))
            if s.api_key and len(s.api_key) >= _MIN_KEY_CHARS:  # a provider may echo the key, of any shape
                said = said.replace(s.api_key, "[REDACTED:api_key]")
            raise LLMError(f"LLM call to {s.model} failed: {type(exc).__name__}: "
                           f"{said.splitlines()[0][:200] if said else ''}") from None
        if not isinstance(text, str) or not text.strip():
            raise LLMError(f"LLM {s.model} returned an empty or malformed answer")
        return text.strip()


def get_llm(settings: LLMSettings) -> LLM | None:
    """The configured LLM, or None when no model is configured (every LLM step then degrades)."""
    if not settings.model:
        return None
    return LiteLLM(settings)
