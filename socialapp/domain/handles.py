"""What a handle is: 3 to 30 of a-z, 0-9 and _, the whole value (no look-alikes such as
``"ops\\n"`` or ``"ops "``)."""

from __future__ import annotations

import re

PATTERN = r"[a-z0-9_]{3,30}"
RULE = "3 to 30 of a-z, 0-9 and _."


def is_handle(text: object) -> bool:
    return isinstance(text, str) and re.fullmatch(PATTERN, text) is not None
