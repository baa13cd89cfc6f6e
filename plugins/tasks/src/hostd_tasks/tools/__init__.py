"""The task tools: typed arguments in, the task's whole record out, messages as ``Text``.

Split by area: ``editing`` (create, update, split, delete), ``reading`` (list, get, stats),
``workflow`` (status moves, the next task, session links), ``activity`` (the newest changes),
``transfer`` (export and import), ``graph`` (the dependency graph and its critical path).
Rules live in ``rules`` and the store (which raises what they refuse); a tool only checks what
its schema cannot say, calls the store and explains the outcome to the model. ``arguments``
holds the argument types they share.
"""
