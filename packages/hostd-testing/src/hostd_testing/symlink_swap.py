"""The attacker of the symlink-swap race: a thread exchanging a real folder inside a root with a
symlink to a folder outside it, as fast as it can, while a test calls file tools.

`renameat2(RENAME_EXCHANGE)` swaps the two names atomically (Linux 3.15+, through libc by
ctypes); where it is missing, three plain renames do the same, less atomically.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["exchange_function", "swapping"]

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2_exchange() -> Callable[[Path, Path], None] | None:
    """libc's renameat2 bound to exchange two names atomically, or None where it is missing."""
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]

    def exchange(first: Path, second: Path) -> None:
        if function(_AT_FDCWD, bytes(first), _AT_FDCWD, bytes(second), _RENAME_EXCHANGE) != 0:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))

    with tempfile.TemporaryDirectory() as probe:  # the kernel or file system may refuse it
        first, second = Path(probe, "a"), Path(probe, "b")
        first.mkdir()
        second.mkdir()
        try:
            exchange(first, second)
        except OSError as exc:
            if exc.errno in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                return None
            raise
    return exchange


def _rename_swap(folder: Path, link: Path) -> None:
    """The fallback attacker: the same two names exchanged by three plain renames."""
    hold = folder.with_name(folder.name + ".hold")
    os.rename(folder, hold)
    os.rename(link, folder)
    os.rename(hold, link)


def exchange_function() -> Callable[[Path, Path], None]:
    """The best exchange this platform has: atomic renameat2, else the rename fallback."""
    return _renameat2_exchange() or _rename_swap


@contextlib.contextmanager
def swapping(folder: Path, link: Path) -> Iterator[list[int]]:
    """Exchange `folder` (a real folder) and `link` (a symlink out) in a thread until the block ends.

    Yields a one-item list counting the swaps done, so a test can check the race really ran.
    """
    exchange = exchange_function()
    stop = threading.Event()
    swaps = [0]

    def run() -> None:
        while not stop.is_set():
            # A name briefly missing (the rename fallback) or re-made by the code under test
            # makes one exchange fail; the attacker just tries again.
            with contextlib.suppress(OSError):
                exchange(folder, link)
                swaps[0] += 1

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield swaps
    finally:
        stop.set()
        thread.join()
