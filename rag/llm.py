"""LLM calls behind one small interface; litellm is the built-in provider.

Every caller treats an LLMError as "no help from the LLM this time" and degrades gracefully;
nothing here is required for ragpg to work. Each call is bounded by the request's LLM budget
(`rag.llm_budget`: `llm.deadline_s` for all the LLM work of one `ask` or `compute_context`).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rag.config import LLMSettings
from rag.errors import LLMError
from rag.llm_budget import Budget, current_budget, in_background, llm_deadline, llm_is_off, wait_within
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
            # LLM calls are async (rag.llm_budget); over httpx, as the sync calls are, an api_base with
            # credentials or a proxy from the environment works the same for both.
            litellm.disable_aiohttp_transport = True
            _preload_provider_modules()
            _litellm = litellm
    return _litellm


def _preload_provider_modules() -> None:
    """The OpenAI client's resources, which litellm's OpenAI-compatible providers load on their first
    call (hundreds of modules, seconds on a busy machine): loaded here, before a request's LLM budget
    starts (`llm_request`), so that the first call of a process does not spend the budget importing."""
    try:
        importlib.import_module("openai.resources")
        importlib.import_module("openai.types.chat")
    except ImportError:  # another provider's client: it loads what it needs on its first call
        pass


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
        budget = current_budget(s.deadline_s)

        def call(remaining_s: float) -> Any:
            return litellm.acompletion(
                model=s.model, messages=payload, api_base=s.api_base, api_key=s.api_key,
                timeout=min(s.timeout_s, remaining_s), num_retries=s.max_retries, temperature=s.temperature,
                max_tokens=max_tokens,
            )

        try:
            response = wait_within(budget, call)
            text = response.choices[0].message.content
        except LLMError:  # the budget ran out or the request was cancelled: said as is
            raise
        except Exception as exc:  # litellm raises many provider-specific types; all mean "no answer"
            said = mask_url(mask_secrets(str(exc)))
            if s.api_key and len(s.api_key) >= _MIN_KEY_CHARS:  # a provider may echo the key, of any shape
                said = said.replace(s.api_key, "[REDACTED:api_key]")
            raise LLMError(f"LLM call to {s.model} failed: {type(exc).__name__}: "
                           f"{said.splitlines()[0][:200] if said else ''}") from None
        if not isinstance(text, str) or not text.strip():
            raise LLMError(f"LLM {s.model} returned an empty or malformed answer")
        return text.strip()


class AskedAhead:
    """An LLM whose answer to one prompt is asked for at once, in the background (under the request's
    budget), so the step that needs it can start before independent work and collect it after:
    `complete` with the same messages waits for that answer (or raises its LLMError)."""

    def __init__(self, llm: LLM, messages: Sequence[Message], *, max_tokens: int | None = None) -> None:
        self.model = llm.model
        self._llm = llm
        self._messages = list(messages)
        self._answer = in_background(lambda: llm.complete(self._messages, max_tokens=max_tokens))

    def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None) -> str:
        if list(messages) != self._messages:  # not the prompt asked ahead: an ordinary call
            return self._llm.complete(messages, max_tokens=max_tokens)
        return self._answer.result()


def get_llm(settings: LLMSettings) -> LLM | None:
    """The configured LLM, or None when no model is configured or the caller runs `without_llm()`
    (every LLM step then degrades)."""
    if not settings.model or llm_is_off():
        return None
    return LiteLLM(settings)


@contextmanager
def llm_request(settings: LLMSettings, *, may_call: bool = True) -> Iterator[Budget]:
    """The one LLM budget of a request (`llm.deadline_s`). litellm is imported before its clock starts
    when the request may call it: the import takes seconds, once per process, and is no wait on the model."""
    if may_call and settings.model and not llm_is_off():
        import_litellm()
    with llm_deadline(settings.deadline_s) as budget:
        yield budget
