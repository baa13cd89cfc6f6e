"""Values WeChat pages keep in inline JavaScript rather than in the DOM.

Modern pages fill the publish time, and for picture and text posts the whole body, from
script variables (``var ct = "..."``, ``window.cgiDataNew = {...}``,
``window.picture_page_info_list = [...]``). This module reads those literals without running
any script: a small string-aware scanner finds object and array literals and their
top-level string fields, and JavaScript string escapes are decoded the way the page's own
``JsDecode`` would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Plain global / cgiData assignments: ``var ct = "1"``, ``window.ct = '1' || ''``, ``d.title = "x"``.
_GLOBAL_KEYS = (
    "msg_title",
    "nickname",
    "nick_name",
    "author",
    "ct",
    "create_time",
    "oriCreateTime",
    "ori_create_time",
    "publish_time",
    "item_show_type",
    "msg_link",
    "msg_source_url",
    "title",
)
_ASSIGNMENT_TAIL = (
    r")\s*=\s*(?:htmlDecode\(\s*|JsDecode\(\s*)?"
    r"(?P<quote>[\"'])(?P<value>(?:\\.|(?!(?P=quote))[^\\\n])*)(?P=quote)"
)
# One pattern per owner, each starting with a literal: the regex engine then skips ahead to the
# literal quickly, several times faster over megabytes of inline script than one alternation.
_ASSIGNMENTS = tuple(
    (owner, re.compile(re.escape(owner) + r"(?P<key>" + "|".join(_GLOBAL_KEYS) + _ASSIGNMENT_TAIL))
    for owner in ("var ", "window.", "d.", "_g.", "cgiData.")
)
_DOCUMENT_WRITE = re.compile(
    r"document\.write\(\s*(?P<quote>[\"'])(?P<value>(?:\\.|(?!(?P=quote))[^\\\n])*)(?P=quote)"
)
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|.)", re.DOTALL)


def decode_js_string(body: str) -> str:
    """The value of a JavaScript string literal's body (escapes resolved)."""
    if "\\" not in body:
        return body

    def replace(match: re.Match[str]) -> str:
        token = match.group(1)
        if token[0] == "x" and len(token) == 3:
            return chr(int(token[1:], 16))
        if token[0] == "u" and len(token) > 1:
            digits = token[2:-1] if token[1] == "{" else token[1:]
            code = int(digits, 16)
            return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
        return _SIMPLE_ESCAPES.get(token, token)

    return _ESCAPE.sub(replace, body)


_STRING_BODY = {
    quote: re.compile(r"(?:\\.|[^\\\n" + quote + r"])*(?:" + quote + r"|\n|$)", re.DOTALL) for quote in "\"'`"
}
_STRUCTURE = re.compile(r"[\"'`{}\[\]()]")


def _skip_string(text: str, start: int) -> int:
    """Index just past the string literal whose opening quote is at ``start``."""
    match = _STRING_BODY[text[start]].match(text, start + 1)
    return match.end() if match else len(text)


def _code_at(text: str, index: int) -> int:
    """The first index at or after ``index`` outside any string literal: what the scanners look at."""
    while index < len(text) and text[index] in "\"'`":
        index = _skip_string(text, index)
    return index


def literal_after(text: str, marker: str) -> str | None:
    """The ``{...}`` or ``[...]`` literal that follows the first ``marker`` in ``text``."""
    position = text.find(marker)
    while position >= 0:
        index = position + len(marker)
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        if index < len(text) and text[index] == "=":
            index += 1
            while index < len(text) and text[index] in " \t\r\n":
                index += 1
            if index < len(text) and text[index] in "{[":
                return _balanced(text, index)
        position = text.find(marker, position + len(marker))
    return None


def _balanced(text: str, start: int) -> str | None:
    depth = 0
    index = start
    while True:
        match = _STRUCTURE.search(text, index)
        if match is None:
            return None
        char = match.group()
        index = match.start()
        if char in "\"'`":
            index = _skip_string(text, index)
            continue
        if char in "{[(":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
        index += 1


_FIELD = re.compile(
    r"(?P<key>[A-Za-z_$][\w$]*)\s*:\s*(?P<call>JsDecode\(\s*|htmlDecode\(\s*)?(?P<quote>[\"'])"
    r"(?P<value>(?:\\.|(?!(?P=quote))[^\\\n])*)(?P=quote)(?(call)\s*\))"
)


def top_level_fields(literal: str) -> dict[str, str]:
    """String-valued fields at the top level of an object literal (``key: 'v'``, ``key: JsDecode('v')``).

    Nested objects are skipped so that, say, a watermark's ``cdn_url`` is not taken for the
    item's own.
    """
    fields: dict[str, str] = {}
    depth = 0
    index = 0
    length = len(literal)
    while (index := _code_at(literal, index)) < length:
        char = literal[index]
        if char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
        elif depth == 1 and (char.isalpha() or char in "_$") and not _is_word(literal, index - 1):
            match = _FIELD.match(literal, index)
            if match:
                fields.setdefault(match.group("key"), decode_js_string(match.group("value")))
                index = match.end()
                continue
        index += 1
    return fields


def _is_name_char(char: str) -> bool:
    return char.isalnum() or char in "_$.-"


def _is_word(text: str, index: int) -> bool:
    return index >= 0 and (text[index].isalnum() or text[index] in "_$")


def array_items(literal: str) -> list[str]:
    """The top-level ``{...}`` elements of an array literal."""
    items: list[str] = []
    index = 1
    length = len(literal)
    while (index := _code_at(literal, index)) < length:
        char = literal[index]
        if char == "{":
            item = _balanced(literal, index)
            if item is None:
                break
            items.append(item)
            index += len(item)
            continue
        index += 1
    return items


@dataclass
class PageData:
    """What the inline scripts say about the article; empty strings where they say nothing."""

    globals: dict[str, list[str]] = field(default_factory=dict)
    cgi: dict[str, str] = field(default_factory=dict)
    picture_urls: list[str] = field(default_factory=list)
    written_text: list[str] = field(default_factory=list)

    def first(self, *keys: str) -> str:
        """The first non-empty value among the global assignments of ``keys``, in key order."""
        for key in keys:
            for value in self.globals.get(key, ()):
                if value.strip():
                    return value.strip()
        return ""

    @property
    def item_show_type(self) -> str:
        return self.first("item_show_type") or self.cgi.get("item_show_type", "")


def read_page_data(scripts: list[str]) -> PageData:
    """Collect the page data from the text of the page's inline scripts."""
    data = PageData()
    for script in scripts:
        for owner, pattern in _ASSIGNMENTS:
            for match in pattern.finditer(script):
                # The owner must start a name (``d.ct``, not ``record.ct``); checked here rather than
                # by a look-behind, which would stop the regex engine from scanning for the literal.
                if match.start() and _is_name_char(script[match.start() - 1]):
                    continue
                key = match.group("key")
                # ``title`` alone is too common in page scripts; only cgiData's own counts.
                if key == "title" and owner in ("var ", "window."):
                    continue
                data.globals.setdefault(key, []).append(decode_js_string(match.group("value")))
        if not data.cgi and "cgiDataNew" in script:
            literal = literal_after(script, "window.cgiDataNew")
            if literal:
                data.cgi = top_level_fields(literal)
        if not data.picture_urls and "picture_page_info_list" in script:
            literal = literal_after(script, "window.picture_page_info_list")
            if literal:
                for item in array_items(literal):
                    url = top_level_fields(item).get("cdn_url", "")
                    if url:
                        data.picture_urls.append(url.replace("&amp;", "&"))
    return data


def document_write_text(script: str) -> str:
    """The string literals a script passes to ``document.write`` (how old pages inline text)."""
    return "".join(decode_js_string(m.group("value")) for m in _DOCUMENT_WRITE.finditer(script))
