"""The ``hostd`` command line (``main``) and what it shares with ``hostd web`` (``runtime``)."""

from hostd.cli.main import main

__all__ = ["main"]
