"""The ``hostd`` command line (``main``); what it shares with ``hostd web`` is ``hostd.core.runtime``."""

from hostd.cli.main import main

__all__ = ["main"]
