"""How `--help` shows option types: a flag takes no value, so it shows none.

Typer 0.29 prints every option's Python type in angle brackets, flags included (`--json <bool>`),
which reads as if the flag wanted a value. Installed once, when the `ragpg` app is built.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperOption

_shown_type = TyperOption.display_type_rich


def _type_unless_flag(self: TyperOption, ctx: Any) -> str | None:
    if self.is_flag:
        return None
    return _shown_type(self, ctx)


def install() -> None:
    TyperOption.display_type_rich = _type_unless_flag  # type: ignore[method-assign]
