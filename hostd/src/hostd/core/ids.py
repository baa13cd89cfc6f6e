"""The id rule of DESIGN.md, once: session, task, template and member ids all follow it."""

from __future__ import annotations

import re

#: 1 to 64 characters of letters, digits, ``_``, ``-`` and ``.``, not starting with ``.``.
ID_PATTERN = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$"
ID_RE = re.compile(ID_PATTERN)
