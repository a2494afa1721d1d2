"""The console's form fields, parsed strictly: a bad value is a 422 page naming it."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from socialapp.domain.fanout import MODES, STRATEGIES
from socialapp.errors import Invalid

MAX_THRESHOLD = 2**31
WHOLE_NUMBER = re.compile(r"[0-9]{1,10}")


@dataclasses.dataclass(frozen=True)
class Change:
    mode: str
    threshold: int


def change_request(form: Mapping[str, str], now: dict) -> Change:
    """The mode and threshold asked for; what is left out stays as ``now``."""
    mode = form.get("mode") or now["mode"]
    if mode not in MODES:
        raise Invalid(f"mode: one of {', '.join(MODES)}")
    raw = (form.get("celebrity_threshold") or "").strip()
    if not raw:
        return Change(mode, now["celebrity_threshold"])
    if not WHOLE_NUMBER.fullmatch(raw) or not 1 <= int(raw) <= MAX_THRESHOLD:
        raise Invalid(f"celebrity threshold: a whole number from 1 to {MAX_THRESHOLD}")
    return Change(mode, int(raw))


def strategy_request(form: Mapping[str, str]) -> str:
    strategy = form.get("strategy", "")
    if strategy not in STRATEGIES:
        raise Invalid(f"strategy: one of {', '.join(STRATEGIES)}")
    return strategy
