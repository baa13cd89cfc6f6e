"""Commands a plugin adds to the ``hostd`` command line (``hostd_register_commands``).

A command is a name for one of the plugin's tools: ``hostd GROUP NAME [options]`` runs that tool
through the call pipeline, as ``hostd call`` does (the access policy, quotas, audit and the
envelope are the pipeline's), each option filling one of the tool's arguments. The plugin writes
no command-line code and never reaches its store another way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

#: A group's and a command's name: what a person types (``tasks``, ``export``).
COMMAND_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")


@dataclass(frozen=True)
class CommandOption:
    """One option of a command and the tool argument it fills.

    ``flags``: ``("-o", "--output")`` for an option, or one bare name (``("file",)``) for a
    positional argument. ``repeat``: the option may be given several times and fills a list
    argument; ``switch``: the option takes no value and sets a boolean argument to true. A value
    is read as the tool's input schema types the argument (a string as typed, anything else as
    JSON), then validated by the tool like any call's.
    """

    flags: tuple[str, ...]
    argument: str
    help: str = ""
    repeat: bool = False
    switch: bool = False


class RegisterCommand(Protocol):
    """The callback ``hostd_register_commands`` receives.

    ``register(group, name, tool=..., help=..., options=..., prints=...)``: ``hostd GROUP NAME``
    runs the plugin's ``tool`` (its unprefixed name). ``prints``: envelope fields written to
    stdout on success, the first one present and not null (a string as it is, anything else as
    JSON); without one, the answer's message. ``--json`` prints the whole envelope instead.
    """

    def __call__(
        self,
        group: str,
        name: str,
        *,
        tool: str,
        help: str,
        options: Sequence[CommandOption] = (),
        prints: Sequence[str] = (),
    ) -> None: ...


@dataclass(frozen=True)
class CommandSpec:
    """A registered command, as the command line offers it: ``tool`` is the name it is served as."""

    plugin: str
    group: str
    name: str
    tool: str
    help: str
    options: tuple[CommandOption, ...]
    prints: tuple[str, ...]
