"""The task store: ``TaskStore(ctx.database())``, on the database the host opened for the plugin.

The plugin declares its tables (``schema``, through ``hostd_database_schema``); the host opens
them on the first call -- the SQLite file named by the ``database`` setting in the plugin's data
folder, or with ``storage`` in the config the plugin's schema in the team database -- migrates
them and closes them at shut-down. The store holds nothing else, so making one per call is free.

The modules of this package, by responsibility:

- ``writes`` (``TaskStore``), on ``queries`` and ``base``: the rules, once, in SQL both databases
  understand (``base`` keeps the few spellings that differ); ``results``: what the store answers
  beyond a single record;
- ``schema``: the tables and their migrations, written once; ``rows``: rows into records, shared
  small queries;
- ``refusals``: what the rules refuse, a table of ``Reason`` and the errors built from it (the
  query language of the text index, Chinese included, is the plugin's ``search`` module);
- ``records``: the list as records, for ``hostd db copy`` (the host copies them).
"""

from __future__ import annotations

from hostd_tasks.store.writes import TaskStore

__all__ = ["TaskStore"]
