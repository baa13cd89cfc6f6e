"""What a host offers besides tools: resources, prompts and completions, as one member sees them.

Each kind of resource and each prompt source follows one tool of its plugin: it is served to a
member exactly where that tool is (``AccessPolicy.tools_for``). The plugin's functions run in a
worker thread for the member of the request (``hostd.core.identity``), as tools do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hostd.core.access import AccessPolicy
from hostd.core.context import CallContext
from hostd.core.identity import Member, acting_as
from hostd.core.prompts import PromptInfo, PromptSource, PromptText
from hostd.core.resources import (
    RESOURCE_PAGE,
    ResourceBlob,
    ResourceInfo,
    ResourceKind,
    ResourceText,
    decode_list_cursor,
    encode_list_cursor,
    find_kind,
    not_found,
)

if TYPE_CHECKING:
    from hostd.core.host import Host


class Offerings:
    """The resources, prompts and completions of one host, per member."""

    def __init__(self, host: Host, policy: AccessPolicy) -> None:
        self.host = host
        self.policy = policy

    def resource_kinds(self, member: Member | None) -> list[ResourceKind]:
        """The kinds of resource the member's tools serve."""
        return self._resource_kinds(self.policy.tools_for(member))

    async def list_resources(
        self, member: Member | None, cursor: str | None
    ) -> tuple[list[ResourceInfo], str | None]:
        with acting_as(member):
            return await self._list_resources(self.resource_kinds(member), cursor)

    async def read_resource(self, member: Member | None, uri: str) -> ResourceText | ResourceBlob:
        """The resource ``uri`` names, read as the member's call of the tool its kind follows (the
        call pipeline's quota and audit trail); NOT_FOUND when no kind they are served has it."""
        with acting_as(member):
            allowed = self.policy.tools_for(member)
            matched = find_kind(self._resource_kinds(allowed), uri)
            if matched is None:
                raise not_found(uri)
            kind, _ = matched
            return await self.host.pipeline.call_for_offering(
                member,
                self._served_tool(kind.plugin, kind.tool, allowed),
                {"uri": uri},
                functools.partial(self._read_resource, [kind], uri),
            )

    async def list_prompts(self, member: Member | None) -> list[tuple[PromptSource, PromptInfo]]:
        with acting_as(member):
            return await self._list_prompts(self._prompt_sources(self.policy.tools_for(member)))

    async def get_prompt(self, member: Member | None, name: str, arguments: dict[str, str]) -> PromptText:
        """The prompt rendered, as the member's call of the tool its source follows (quota, audit);
        ``KeyError`` when no source they are served has it, ``CodedError`` from the plugin."""
        with acting_as(member):
            allowed = self.policy.tools_for(member)
            for source, prompt in await self._list_prompts(self._prompt_sources(allowed)):
                if prompt.name == name:
                    return await self.host.pipeline.call_for_offering(
                        member,
                        self._served_tool(source.plugin, source.tool, allowed),
                        {"prompt": name},
                        functools.partial(self._render_prompt, source, name, arguments),
                    )
            raise KeyError(name)

    async def complete(
        self,
        member: Member | None,
        *,
        template: str | None,
        prompt: str | None,
        argument: str,
        prefix: str,
        arguments: dict[str, str],
    ) -> list[str]:
        """Values for an argument of a served resource template or prompt, best first (none when unknown)."""
        with acting_as(member):
            allowed = self.policy.tools_for(member)
            if template is not None:
                return await self._complete_template(member, allowed, template, argument, prefix, arguments)
            return await self._complete_prompt(member, allowed, prompt, argument, prefix, arguments)

    # --- the implementations ----------------------------------------------------------------

    def _serves(self, plugin: str, tool: str, allowed_tools: frozenset[str] | None) -> bool:
        return any(
            spec.plugin == plugin
            and spec.registered_name == tool
            and (allowed_tools is None or spec.name in allowed_tools)
            for spec in self.host.tools.values()
        )

    def _prompt_sources(self, allowed_tools: frozenset[str] | None) -> list[PromptSource]:
        """The prompt sources this profile (or member) serves: each follows one tool, like resources."""
        return [s for s in self.host.prompt_sources if self._serves(s.plugin, s.tool, allowed_tools)]

    async def _list_prompts(self, sources: Sequence[PromptSource]) -> list[tuple[PromptSource, PromptInfo]]:
        """Every served prompt with its source; a name offered twice keeps its first source."""
        import anyio

        found: dict[str, tuple[PromptSource, PromptInfo]] = {}
        for source in sources:
            prompts = await anyio.to_thread.run_sync(source.list, self._resource_context(source.plugin))
            for prompt in prompts:
                found.setdefault(prompt.name, (source, prompt))
        return list(found.values())

    async def _render_prompt(self, source: PromptSource, name: str, arguments: dict[str, str]) -> PromptText:
        import anyio

        rendered: PromptText = await anyio.to_thread.run_sync(
            functools.partial(source.get, self._resource_context(source.plugin), name, arguments)
        )
        return rendered

    async def _complete_template(
        self,
        member: Member | None,
        allowed: frozenset[str] | None,
        template: str,
        argument: str,
        prefix: str,
        arguments: dict[str, str],
    ) -> list[str]:
        """Values for an argument of the served resource template ``template`` (none when unknown)."""
        for kind in self._resource_kinds(allowed):
            if kind.uri_template == template and kind.complete is not None and argument in kind.arguments:
                work = functools.partial(
                    kind.complete, self._resource_context(kind.plugin), argument, prefix, arguments
                )
                asked = {"template": template, "argument": argument}
                return await self._as_call(member, allowed, kind.plugin, kind.tool, asked, work)
        return []

    async def _complete_prompt(
        self,
        member: Member | None,
        allowed: frozenset[str] | None,
        prompt: str | None,
        argument: str,
        prefix: str,
        arguments: dict[str, str],
    ) -> list[str]:
        """Values for an argument of the served prompt ``prompt`` (none when unknown)."""
        for source, info in await self._list_prompts(self._prompt_sources(allowed)):
            if info.name == prompt and source.complete is not None:
                if argument not in {a.name for a in info.arguments}:
                    return []
                work = functools.partial(
                    source.complete,
                    self._resource_context(source.plugin),
                    prompt,
                    argument,
                    prefix,
                    arguments,
                )
                asked = {"prompt": prompt, "argument": argument}
                return await self._as_call(member, allowed, source.plugin, source.tool, asked, work)
        return []

    async def _as_call(
        self,
        member: Member | None,
        allowed: frozenset[str] | None,
        plugin: str,
        tool: str,
        asked: dict[str, str],
        work: Callable[[], list[str]],
    ) -> list[str]:
        """A plugin's completion function in a worker thread, as the member's call of ``tool``
        through the call pipeline (its quota, one record in the audit trail)."""
        import anyio

        async def run() -> list[str]:
            return await anyio.to_thread.run_sync(work)

        return await self.host.pipeline.call_for_offering(
            member, self._served_tool(plugin, tool, allowed), asked, run
        )

    def _resource_kinds(self, allowed_tools: frozenset[str] | None) -> list[ResourceKind]:
        """The kinds of resource this profile serves (for a member limited to ``allowed_tools``, fewer):
        a kind is served exactly where the tool it follows is."""
        served = {
            (spec.plugin, spec.registered_name)
            for spec in self.host.tools.values()
            if allowed_tools is None or spec.name in allowed_tools
        }
        return [kind for kind in self.host.resource_kinds if (kind.plugin, kind.tool) in served]

    def _served_tool(self, plugin: str, tool: str, allowed_tools: frozenset[str] | None) -> str:
        """The served name of ``plugin``'s tool ``tool`` (a profile may prefix it)."""
        return next(
            spec.name
            for spec in self.host.tools.values()
            if spec.plugin == plugin
            and spec.registered_name == tool
            and (allowed_tools is None or spec.name in allowed_tools)
        )

    def _resource_context(self, plugin: str) -> CallContext[Any]:
        return CallContext(self.host.contexts[plugin], cwd=self.host.cwd)

    async def _list_resources(
        self, kinds: Sequence[ResourceKind], cursor: str | None
    ) -> tuple[list[ResourceInfo], str | None]:
        """One page of ``resources/list``: each kind in turn, each paged by its own listing.

        Raises ``ValueError`` for a cursor that is not one of ours, ``CodedError`` from a plugin.
        """
        import anyio

        index, inner = decode_list_cursor(cursor)
        if index > len(kinds) or (index == len(kinds) and cursor is not None):
            raise ValueError("other_listing")
        found: list[ResourceInfo] = []
        while index < len(kinds) and len(found) < RESOURCE_PAGE:
            kind = kinds[index]
            if kind.list is None:  # a template's resources are made on demand: nothing to list
                if inner is not None:  # no cursor of ours points inside a kind that lists nothing
                    raise ValueError("forged")
                index, inner = index + 1, None
                continue
            page = await anyio.to_thread.run_sync(
                functools.partial(kind.list, self._resource_context(kind.plugin), inner)
            )
            found.extend(page.resources)
            if page.next_cursor is not None:
                return found, encode_list_cursor(index, page.next_cursor)
            index, inner = index + 1, None
        return found, (encode_list_cursor(index, None) if index < len(kinds) else None)

    async def _read_resource(self, kinds: Sequence[ResourceKind], uri: str) -> ResourceText | ResourceBlob:
        """The resource ``uri`` names; ``CodedError`` NOT_FOUND when no served kind has it."""
        import anyio

        matched = find_kind(kinds, uri)
        if matched is None:
            raise not_found(uri)
        kind, params = matched
        result: ResourceText | ResourceBlob = await anyio.to_thread.run_sync(
            functools.partial(kind.read, self._resource_context(kind.plugin), params)
        )
        return result
