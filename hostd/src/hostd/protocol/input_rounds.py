"""Asking the client mid-call: progress, sampling, roots and confirmations, in both protocol eras.

Before 2026-07-28 the server sends requests to the client during a call (``SdkChannel``); from
that revision on it answers the call with its questions (``InputRound``: input_required) and the
client calls again with the answers, carried between rounds in a sealed ``requestState``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import warnings
from typing import TYPE_CHECKING, Any, TypeVar

import mcp_types as types
from hostd_errors import Text
from mcp.server.elicitation import render_elicitation_schema
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, ValidationError

from hostd.api import Confirmation, SamplingResult
from hostd.core.context import ClientInputNeeded

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from hostd.core.host import Host


logger = logging.getLogger("hostd.server")

AnswerT = TypeVar("AnswerT", bound=BaseModel)

# From this revision on the server may not send requests to the client: it asks for roots
# and sampling inside a tool call's result (input_required) and the client calls again.
INPUT_REQUIRED_VERSION = "2026-07-28"
ROOTS_KEY = "roots"
#: The key of a confirmation's question starts with this (the rest: a digest of its message).
CONFIRM_PREFIX = "confirm-"
_STATE_VERSION = 1


class InputRound:
    """One round of a ``tools/call`` on the 2026-07-28 protocol: the client's answers so far,
    and the questions this round still has for it.

    The client answers only the questions of the round before, so earlier answers ride in
    ``requestState`` (sealed by the SDK's ``RequestStateBoundary``) and each question is asked
    once. A tool is run again from the start on every round, so it must ask the same question
    the same way (the wechat digest's prompt is built from the articles alone).
    """

    def __init__(self, answers: dict[str, Any]) -> None:
        self._answers = answers
        self.questions: dict[str, types.InputRequest] = {}

    @classmethod
    def of(cls, params: types.CallToolRequestParams, host: Host) -> InputRound:
        """Earlier answers from the state, plus the answers to the questions asked last round."""
        answers, asked = _decode_state(params.request_state)
        for key, response in (params.input_responses or {}).items():
            if key not in asked:
                continue  # only questions this server asked are answered
            if not isinstance(response, answer_models(key)):
                raise MCPError(
                    types.INVALID_PARAMS,
                    Text(
                        en=f"inputResponses[{key!r}] does not answer the {_method_of(key)} request "
                        "it was asked.",
                        zh=f"inputResponses[{key!r}] 不是对所提 {_method_of(key)} 请求的回答。",
                    ).render(host.language),
                )
            answers[key] = response.model_dump(by_alias=True, mode="json", exclude_none=True)
        return cls(answers)

    def answer(self, key: str, model: type[AnswerT]) -> AnswerT | None:
        raw = self._answers.get(key)
        if raw is None:
            return None
        try:
            return model.model_validate(raw)
        except ValidationError:  # state from an older build: ask again
            return None

    def ask(self, key: str, request: types.InputRequest) -> None:
        self.questions[key] = request

    def input_required(self) -> types.InputRequiredResult:
        state = {"v": _STATE_VERSION, "answers": self._answers, "asked": sorted(self.questions)}
        return types.InputRequiredResult(
            input_requests=dict(self.questions),
            request_state=json.dumps(state, separators=(",", ":"), ensure_ascii=True),
        )


def _decode_state(request_state: str | None) -> tuple[dict[str, Any], set[str]]:
    """Answers and asked keys from a ``requestState`` the boundary has already verified."""
    if not request_state:
        return {}, set()
    try:
        state = json.loads(request_state)
        answers, asked = state["answers"], state["asked"]
        if state["v"] != _STATE_VERSION or not isinstance(answers, dict) or not isinstance(asked, list):
            raise ValueError("unexpected shape")
    except (ValueError, KeyError, TypeError):
        return {}, set()  # a state this build did not write: start over
    return answers, {key for key in asked if isinstance(key, str)}


def answer_models(key: str) -> tuple[type[BaseModel], ...]:
    """What may answer the question under ``key`` (a model's content may be one block or a list)."""
    if key == ROOTS_KEY:
        return (types.ListRootsResult,)
    if key.startswith(CONFIRM_PREFIX):
        return (types.ElicitResult,)
    return (types.CreateMessageResult, types.CreateMessageResultWithTools)


def _method_of(key: str) -> str:
    if key.startswith(CONFIRM_PREFIX):
        return "elicitation/create"
    return "roots/list" if key == ROOTS_KEY else "sampling/createMessage"


# A confirmation asks for nothing but the person's answer: a form without fields (no docstring,
# which would become the schema's description).
class ConfirmForm(BaseModel):
    pass


#: The form a confirmation shows, rendered once by the SDK's own elicitation helper.
CONFIRM_SCHEMA: dict[str, Any] = render_elicitation_schema(ConfirmForm)

CONFIRMATION_OF: dict[str, Confirmation] = {
    "accept": "accepted",
    "decline": "declined",
    "cancel": "cancelled",
}


def confirm_params(question: str) -> types.ElicitRequestFormParams:
    return types.ElicitRequestFormParams(message=question, requested_schema=CONFIRM_SCHEMA)


def confirm_key(question: str) -> str:
    """The same question gets the same key each round; another question (another record) another."""
    return CONFIRM_PREFIX + hashlib.sha256(question.encode()).hexdigest()[:32]


def can_confirm(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client shows form elicitations: ``elicitation: {}`` means form mode, and a
    client that names modes must name ``form`` (one offering URL mode only cannot confirm)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    return elicitation.form is not None or elicitation.url is None


def speaks_input_required(request: ServerRequestContext[Any, Any]) -> bool:
    """Whether this call's protocol revision asks the client through results, not requests."""
    return is_version_at_least(request.session.protocol_version, INPUT_REQUIRED_VERSION)


def sampling_params(prompt: str, system: str | None, max_tokens: int) -> types.CreateMessageRequestParams:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    return types.CreateMessageRequestParams(messages=[message], system_prompt=system, max_tokens=max_tokens)


def sampling_key(params: types.CreateMessageRequestParams) -> str:
    """The same question gets the same key in every round, so its answer is found again."""
    rendered = json.dumps(params.model_dump(by_alias=True, mode="json", exclude_none=True), sort_keys=True)
    return "sample-" + hashlib.sha256(rendered.encode()).hexdigest()[:32]


def sampling_result(
    result: types.CreateMessageResult | types.CreateMessageResultWithTools,
) -> SamplingResult:
    blocks = result.content if isinstance(result.content, list) else [result.content]
    text = "".join(block.text for block in blocks if isinstance(block, types.TextContent))
    if not text:
        return SamplingResult(
            available=False,
            reason=Text(en="the client's model returned no text", zh="客户端模型没有返回文字"),
        )
    return SamplingResult(available=True, text=text, model=result.model)


class SdkChannel:
    """The client, as one tool call sees it: progress, sampling (when declared).

    Before 2026-07-28 sampling is a request to the client; from it on, ``input_round`` is set
    and a question without an answer yet ends the round (``ClientInputNeeded``).
    """

    def __init__(
        self, request: ServerRequestContext[Any, Any], input_round: InputRound | None = None
    ) -> None:
        self._request = request
        self._round = input_round

    @property
    def can_sample(self) -> bool:
        capabilities = self._request.session.client_capabilities
        declared = bool(capabilities and capabilities.sampling is not None)
        return declared and (self._round is not None or self._request.session.can_send_request)

    @property
    def can_elicit(self) -> bool:
        declared = can_confirm(self._request.session.client_capabilities)
        return declared and (self._round is not None or self._request.session.can_send_request)

    async def confirm(self, question: str) -> Confirmation:
        """The person's answer to ``question``, a form without fields: before 2026-07-28 an
        ``elicitation/create`` request on this call's own stream; from it on, a question in the
        call's result (``ClientInputNeeded`` until the client calls again with the answer)."""
        if self._round is not None:
            key = confirm_key(question)
            answer = self._round.answer(key, types.ElicitResult)
            if answer is None:
                self._round.ask(key, types.ElicitRequest(params=confirm_params(question)))
                raise ClientInputNeeded(key)
            return CONFIRMATION_OF[answer.action]
        try:
            result = await self._request.session.elicit_form(
                question, CONFIRM_SCHEMA, related_request_id=self._request.request_id
            )
        except Exception as exc:
            # The client declared elicitation, then failed to ask or answered an error: no one said
            # yes, so nothing is done (as when the person dismisses the question).
            logger.warning("confirmation request failed: %s", exc)
            return "cancelled"
        return CONFIRMATION_OF[result.action]

    async def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        try:
            await self._request.session.report_progress(progress, total, message)
        except Exception:  # progress is best effort: never fail a call because of it
            logger.debug("progress notification not delivered", exc_info=True)

    async def sample(self, prompt: str, system: str | None, max_tokens: int) -> SamplingResult:
        params = sampling_params(prompt, system, max_tokens)
        if self._round is not None:
            key = sampling_key(params)
            answer = self._round.answer(key, types.CreateMessageResultWithTools)
            if answer is None:
                self._round.ask(key, types.CreateMessageRequest(params=params))
                raise ClientInputNeeded(key)
            return sampling_result(answer)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                result = await self._request.session.create_message(
                    params.messages, max_tokens=max_tokens, system_prompt=system
                )
        except MCPError as exc:
            return SamplingResult(
                available=False,
                reason=Text(en="the client declined: {why}", zh="客户端拒绝了请求：{why}").format(
                    why=exc.message
                ),
            )
        except Exception as exc:
            logger.warning("sampling request failed: %s", exc)
            return SamplingResult(
                available=False,
                reason=Text(en="sampling failed ({kind})", zh="采样失败（{kind}）").format(
                    kind=type(exc).__name__
                ),
            )
        return sampling_result(result)


async def client_roots(request: ServerRequestContext[Any, Any]) -> list[str] | None:
    """The client's roots as URIs, or ``None`` when it did not declare the capability."""
    capabilities = request.session.client_capabilities
    if capabilities is None or capabilities.roots is None or not request.session.can_send_request:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result = await request.session.list_roots()
    except Exception as exc:
        # The configured allowed_roots still apply: roots are never the only line of defence.
        logger.warning("client declared roots but roots/list failed: %s", exc)
        return None
    return [str(root.uri) for root in result.roots]


def roots_from_round(request: ServerRequestContext[Any, Any], input_round: InputRound) -> list[str] | None:
    """The client's roots on 2026-07-28: answered, ``None`` when not declared; else asked for."""
    capabilities = request.session.client_capabilities
    if capabilities is None or capabilities.roots is None:
        return None
    answer = input_round.answer(ROOTS_KEY, types.ListRootsResult)
    if answer is None:
        input_round.ask(ROOTS_KEY, types.ListRootsRequest())
        raise ClientInputNeeded(ROOTS_KEY)
    return [str(root.uri) for root in answer.roots]


def only_input_needed(exc: BaseException) -> bool:
    """True when everything that ended the call was a question for the client (also in groups)."""
    if isinstance(exc, BaseExceptionGroup):
        _, rest = exc.split(ClientInputNeeded)
        return rest is None
    return isinstance(exc, ClientInputNeeded)
