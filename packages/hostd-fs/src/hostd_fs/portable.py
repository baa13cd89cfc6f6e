"""The naming rules a file name must follow to be usable on Linux, macOS and Windows alike.

Both the path sandbox (which refuses bad names) and `clean_filename` (which repairs them) ask
the same questions, so the rules live here once.
"""

from __future__ import annotations

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
#: Folders a path may nest: far past any real tree, short of what makes tools and OSes choke.
MAX_PATH_DEPTH = 128

# Windows reserves these device names whatever the extension ("con.txt", "Nul.tar.gz"); the
# superscript digits are reserved too, and CONIN$/CONOUT$ open the console.
_WINDOWS_DEVICE_NAMES = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"{port}{digit}" for port in ("COM", "LPT") for digit in "123456789¹²³"}
)

#: Characters Windows forbids in a name (besides control characters).
WINDOWS_FORBIDDEN_CHARACTERS = frozenset('<>:"/\\|?*')


def utf8_length(text: str) -> int:
    """Length in bytes as the file system will store it (undecodable bytes count as one)."""
    return len(text.encode("utf-8", "surrogateescape"))


def is_windows_device_name(name: str) -> bool:
    """True when Windows would treat `name` as a device (CON, nul.txt, "LPT1 .md", ...)."""
    stem = name.partition(".")[0].rstrip(" ")
    return stem.upper() in _WINDOWS_DEVICE_NAMES


def has_trailing_dot_or_space(name: str) -> bool:
    """True for names Windows silently renames by dropping a final dot or space.

    `.` and `..` are navigation, not names, and are left to the containment check.
    """
    return name not in (".", "..") and name.endswith((".", " "))
