"""The team wing: who a caller is and what their calls cost and leave behind.

Members and their tokens (``members``), OAuth sign-in (``auth``), quotas, the audit trail,
Prometheus metrics, traces, readiness and the host's own tables in the team database.
"""
