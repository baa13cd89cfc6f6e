"""What the operators' tools see of each tool call: one ``CallRecord`` per finished call.

The host hands every record to its ``call_observers`` (metrics, the audit trail) right after
the call; an observer must be quick and must not raise (a failing observer is logged and the
call's answer is unaffected). With no observers, calls cost nothing extra.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

logger = logging.getLogger("hostd.observe")

#: The outcome of a call that succeeded; an error's outcome is its code (``NOT_FOUND``, ...).
OK = "ok"
#: A call cut short (the client went away, the server stopping) before it answered.
CANCELLED = "CANCELLED"


@dataclass(frozen=True)
class CallRecord:
    """One finished tool call. ``arguments`` are for digesting only: never store or log them."""

    tool: str
    plugin: str
    member: str
    outcome: str
    started_at: float  # seconds since the epoch
    duration: float  # seconds
    arguments: Mapping[str, Any] | None
    #: Where the call came in: ``mcp``, ``ui`` (the dashboard) or ``cli``.
    surface: str = "mcp"


CallObserver = Callable[[CallRecord], None]


class CallSpan(Protocol):
    def finish(self, outcome: str) -> None: ...


class CallTracer(Protocol):
    """Opens a span around a call (``hostd.team.tracing``); the span is current while the tool runs."""

    def span(self, tool: str, plugin: str, member: str) -> AbstractContextManager[CallSpan]: ...


class CallObservers:
    """The observers of one host, and the calls in flight per tool (read by the metrics)."""

    def __init__(self) -> None:
        self.observers: list[CallObserver] = []
        self.in_flight: Counter[str] = Counter()
        self.tracer: CallTracer | None = None

    def __bool__(self) -> bool:
        return bool(self.observers) or self.tracer is not None

    def add(self, observer: CallObserver) -> None:
        self.observers.append(observer)

    def notify(self, record: CallRecord) -> None:
        for observer in self.observers:
            try:
                observer(record)
            except Exception:
                logger.exception("call observer %r failed", observer)
