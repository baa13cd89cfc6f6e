"""The host's two languages, and the default taken from the locale."""

from __future__ import annotations

import locale
import os
from typing import Literal

Language = Literal["zh", "en"]


def language_from_locale() -> Language:
    """``zh`` when the user's locale is Chinese, else ``en``."""
    for var in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"):
        value = os.environ.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    try:
        current = locale.getlocale()[0] or ""
    except ValueError:
        current = ""
    return "zh" if current.lower().startswith("zh") else "en"
