"""Counting tokens for context budgets: tiktoken's cl100k_base, or characters / 4.

tiktoken comes with litellm; its encodings are normally downloaded on first use, which this
machine cannot do, so we point it at the copy litellm bundles (without importing litellm,
which takes seconds). When neither works, tokens are estimated as characters / 4 and the
counter's name says so.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path

Counter = Callable[[str], int]


def _bundled_cache_dir() -> str | None:
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    return str(folder) if folder.is_dir() else None


def estimate(text: str) -> int:
    return (len(text) + 3) // 4


@cache
def token_counter() -> tuple[str, Counter]:
    """(name, count function) of the best counter available."""
    try:
        import tiktoken

        if "TIKTOKEN_CACHE_DIR" not in os.environ:
            bundled = _bundled_cache_dir()
            if bundled is not None:
                os.environ["TIKTOKEN_CACHE_DIR"] = bundled
        encoding = tiktoken.get_encoding("cl100k_base")
    except Exception:  # no tiktoken, or no encoding file reachable: estimate instead
        return "chars/4", estimate

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return "tiktoken:cl100k_base", count
