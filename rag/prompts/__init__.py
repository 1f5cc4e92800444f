"""Prompt templates kept as files: a comment header lists the variables, `---` starts the text.

May import: `rag.errors`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from rag.errors import ConfigError


@dataclass(frozen=True)
class Prompt:
    name: str
    variables: frozenset[str]
    template: str

    def render(self, **values: object) -> str:
        missing = self.variables - values.keys()
        extra = values.keys() - self.variables
        if missing or extra:
            raise ConfigError(f"prompt '{self.name}' needs {sorted(self.variables)}, got {sorted(values)}")
        return self.template.format(**values)


@cache
def load_prompt(name: str) -> Prompt:
    try:
        raw = (resources.files("rag.prompts") / f"{name}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no prompt named '{name}'") from None
    header, sep, body = raw.partition("\n---\n")
    if not sep:
        return Prompt(name, frozenset(), raw)
    declared = re.search(r"^# variables:(.*)$", header, re.MULTILINE)
    variables = frozenset(v.strip() for v in declared.group(1).split(",") if v.strip()) if declared else frozenset()
    used = frozenset(re.findall(r"(?<!\{)\{(\w+)\}(?!\})", body))
    if used != variables:
        raise ConfigError(f"prompt '{name}' declares {sorted(variables)} but uses {sorted(used)}")
    return Prompt(name, variables, body.strip() + "\n")
