"""One bilingual text type and one error protocol for every part of hostd.

Code below the host (stores, ``hostd-fs``, ``hostd-db``) does not know which language the
server speaks: it says things as ``Text`` and raises ``CodedError``; the host picks the
language when it writes the answer. That keeps the language out of domain code, and makes a
missing translation a type error instead of an English fragment in a Chinese answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:  # pydantic calls the hooks below; this package does not need it otherwise
    from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
    from pydantic_core import CoreSchema, core_schema

Language = Literal["zh", "en"]


def _in(value: Any, language: str) -> Any:
    return value.render(language) if isinstance(value, Text) else value


class _Unfilled(dict[str, Any]):
    # A placeholder with no value renders as "?": showing an error must never raise.
    def __missing__(self, key: str) -> str:
        return "?"


def is_chinese(language: str) -> bool:
    """``zh``, ``zh-CN``, ``zh_Hans`` ... are Chinese; anything else is English."""
    return language.lower().replace("_", "-").startswith("zh")


@dataclass(frozen=True, slots=True)
class Text:
    """The same sentence in English and in Simplified Chinese."""

    en: str
    zh: str

    def render(self, language: str) -> str:
        """The sentence in ``language`` (English for anything that is not Chinese)."""
        return self.zh if is_chinese(language) else self.en

    def format(self, **values: object) -> Text:
        """Both sentences with ``{name}`` placeholders filled; a missing one shows as ``?``.

        A ``Text`` value fills each sentence in that sentence's language, so a clause that reads
        differently in Chinese (a word order, a full stop) can be a value, not a second template.
        """

        def filled(language: str) -> _Unfilled:
            return _Unfilled({key: _in(value, language) for key, value in values.items()})

        return Text(en=self.en.format_map(filled("en")), zh=self.zh.format_map(filled("zh")))

    def __add__(self, other: Text | str) -> Text:
        if isinstance(other, str):
            return Text(en=self.en + other, zh=self.zh + other)
        return Text(en=self.en + other.en, zh=self.zh + other.zh)

    def __radd__(self, other: str) -> Text:
        return Text(en=other + self.en, zh=other + self.zh)

    def __str__(self) -> str:
        return self.en

    @classmethod
    def __get_pydantic_core_schema__(cls, source: object, handler: GetCoreSchemaHandler) -> CoreSchema:
        """A ``Text`` field of a pydantic model (a tool's output): it takes a ``Text`` (or a plain
        string, the same in both languages) and is written as the sentence in the language the
        serialization context names (``model_dump(context={"language": "zh"})``; English without)."""
        from pydantic_core import core_schema

        def to_text(value: object) -> Text:
            if isinstance(value, Text):
                return value
            if isinstance(value, str):
                return Text.same(value)
            raise ValueError("must be a hostd.Text or a string")

        def written(value: Text, info: core_schema.SerializationInfo) -> str:
            context = info.context
            language = context.get("language") if isinstance(context, dict) else None
            return value.render(language if isinstance(language, str) else "en")

        return core_schema.no_info_plain_validator_function(
            to_text,
            serialization=core_schema.plain_serializer_function_ser_schema(
                written, info_arg=True, return_schema=core_schema.str_schema()
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, str]:
        """In a schema (a tool's ``outputSchema``) a ``Text`` is the string it is written as."""
        return {"type": "string"}

    @staticmethod
    def same(value: str) -> Text:
        """Words that read the same in both languages (a name, a path, a number)."""
        return Text(en=value, zh=value)

    @staticmethod
    def join(parts: list[Text], en: str = "; ", zh: str = "；") -> Text:
        """The parts one after another, with each language's own separator."""
        return Text(en=en.join(part.en for part in parts), zh=zh.join(part.zh for part in parts))


#: What may stand where a sentence goes: a ``Text``, or a plain string that reads the same in both.
Message = Text | str


def render(value: Message | None, language: str) -> str | None:
    """``value`` in ``language``; a plain string is shown as it is."""
    if value is None or isinstance(value, str):
        return value
    return value.render(language)


def render_details(details: Mapping[str, object], language: str) -> dict[str, object]:
    """Details with any ``Text`` inside (values, lists, nested mappings) rendered in ``language``."""

    def one(value: Any) -> Any:
        if isinstance(value, Text):
            return value.render(language)
        if isinstance(value, Mapping):
            return {key: one(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [one(item) for item in value]
        return value

    return {key: one(value) for key, value in details.items()}


class Reason(NamedTuple):
    """One documented cause of an error: its code, and the message and advice in both languages.

    The four sentences are templates (``{name}`` filled from the error's facts); libraries keep
    a table of these keyed by their stable reason names.
    """

    code: str
    message_en: str
    message_zh: str
    hint_en: str
    hint_zh: str

    def message(self, **values: object) -> Text:
        return Text(en=self.message_en, zh=self.message_zh).format(**values)

    def hint(self, **values: object) -> Text:
        return Text(en=self.hint_en, zh=self.hint_zh).format(**values)


def _is_code(code: str) -> bool:
    return bool(code) and code.upper() == code and " " not in code


class CodedError(Exception):
    """A failure the caller can act on: a stable ``code``, what went wrong, what to do instead.

    ``message`` and ``hint`` are ``Text`` (or a plain string that reads the same in both
    languages); ``details`` must be JSON-serialisable (``Text`` inside is rendered too). The host
    answers it as an ``isError`` envelope in the server's language; ``str(error)`` is English,
    for logs.
    """

    def __init__(
        self,
        code: str,
        message: Message,
        *,
        hint: Message | None = None,
        details: Mapping[str, object] | None = None,
    ) -> None:
        if not _is_code(code):
            raise ValueError(f"error codes are UPPER_SNAKE, got {code!r}")
        self.code = code
        self.message: Text = Text.same(message) if isinstance(message, str) else message
        self.hint: Text | None = Text.same(hint) if isinstance(hint, str) else hint
        self.details: dict[str, object] = dict(details or {})
        super().__init__(self.message.en)

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors cross process boundaries (worker pools); rebuild from the fields, not str(self).
        return (_rebuild, (type(self), self.__dict__.copy()))

    def rendered(self, language: str) -> tuple[str, str | None, dict[str, object]]:
        """Message, hint and details as the answer in ``language`` shows them."""
        hint = None if self.hint is None else self.hint.render(language)
        return self.message.render(language), hint, render_details(self.details, language)


def _rebuild(cls: type[CodedError], state: dict[str, Any]) -> CodedError:
    error = cls.__new__(cls)
    Exception.__init__(error, state["message"].en)
    error.__dict__.update(state)
    return error


__all__ = ["CodedError", "Language", "Message", "Reason", "Text", "is_chinese", "render", "render_details"]
