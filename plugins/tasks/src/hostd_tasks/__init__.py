"""hostd-tasks: a prioritized task list that agents can share (entry point ``tasks``)."""
