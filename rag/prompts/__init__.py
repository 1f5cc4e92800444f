"""Prompt templates kept as files: a comment header lists the variables, `---` starts the text.

May import: `rag.errors`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final

from rag.errors import ConfigError

# Resolved: the README's editable install links each file into a tree of its own (setup.cfg), so a
# template added after the install is found in the source folder.
PROMPTS_DIR: Final = Path(__file__).resolve().parent


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
        raw = (PROMPTS_DIR / f"{name}.txt").read_text(encoding="utf-8")
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
