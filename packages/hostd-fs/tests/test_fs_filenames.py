"""clean_filename: any title becomes a name Linux, macOS and Windows all accept, stably."""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath

import pytest
from hostd_fs import clean_filename

# Written out here rather than imported, so the test does not trust the code it checks.
WINDOWS_DEVICES = {"CON", "PRN", "AUX", "NUL"} | {f"{p}{d}" for p in ("COM", "LPT") for d in "123456789"}
WINDOWS_FORBIDDEN = set('<>:"/\\|?*')
CHINESE_TITLE = "关于大模型工具调用协议的长篇技术总结与实践经验分享" * 12  # 300 characters

HOSTILE_NAMES = [
    "CON.md",
    "NUL",
    "con",
    "Aux.tar.gz",
    "lpt1 .txt",
    "trailing. ",
    "trailing...",
    "   spaced   out   ",
    'a/b\\c:d*?"<>|',
    "..",
    ".",
    "...",
    "",
    " ",
    ".md",
    ".hidden",
    CHINESE_TITLE + ".md",
    "x" * 400,
    "emoji 😀 family 👨‍👩‍👧 title.md",
    "😀" * 100 + ".md",
    "tab\there\nnewline\rcr\x00nul\x1bescape\x7fdel.md",
    "\u202egnp.exe",  # right-to-left override
    "e\u0301t\u0301e\u0301.md",  # decomposed accents
    "notes: 2024/05/01 | draft?",
    "\udcff lone surrogate.md",
]


def assert_portable(name: str, *, max_bytes: int = 255) -> None:
    assert name, "empty name"
    assert name not in (".", "..")
    assert PureWindowsPath(name).name == name, "Windows would read it as a path, not a name"
    assert PurePosixPath(name).name == name
    assert PureWindowsPath(name).anchor == ""
    assert not name.endswith((".", " ")), "Windows drops a final dot or space"
    assert not name.startswith((" ", "."))
    assert name.partition(".")[0].rstrip(" ").upper() not in WINDOWS_DEVICES
    assert not WINDOWS_FORBIDDEN & set(name)
    assert all(ord(character) >= 32 and character != "\x7f" for character in name)
    assert len(name.encode("utf-8")) <= max_bytes


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_become_portable_and_stable(name: str) -> None:
    cleaned = clean_filename(name)
    assert_portable(cleaned)
    assert clean_filename(cleaned) == cleaned


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("CON.md", "_CON.md"),
        ("nul", "_nul"),
        ("con", "_con"),
        ("COM1.tar.gz", "_COM1.tar.gz"),
        ("trailing. ", "trailing"),
        ("..", "untitled"),
        (".", "untitled"),
        ("", "untitled"),
        (".md", "untitled.md"),
        ('a/b\\c:d*?"<>|', "a_b_c_d_"),
        ("Plain name.md", "Plain name.md"),
        ("  a   b  ", "a b"),
        ("tab\there\x00.md", "tab here.md"),
        ("emoji 😀.md", "emoji 😀.md"),
        ("\u202egnp.exe", "gnp.exe"),
    ],
)
def test_known_repairs(name: str, expected: str) -> None:
    assert clean_filename(name) == expected


def test_a_long_chinese_title_is_cut_on_a_character_boundary_keeping_the_extension() -> None:
    cleaned = clean_filename(CHINESE_TITLE + ".md")
    assert cleaned.endswith(".md")
    assert len(cleaned.encode()) == 255  # 84 three-byte characters + ".md"
    assert CHINESE_TITLE.startswith(cleaned.removesuffix(".md"))


def test_emoji_are_never_split() -> None:
    cleaned = clean_filename("😀" * 100 + ".md")
    assert cleaned == "😀" * 63 + ".md"


@pytest.mark.parametrize("max_bytes", [8, 16, 50, 100])
def test_max_bytes_is_respected(max_bytes: int) -> None:
    for name in HOSTILE_NAMES:
        cleaned = clean_filename(name, max_bytes=max_bytes)
        assert_portable(cleaned, max_bytes=max_bytes)
        assert clean_filename(cleaned, max_bytes=max_bytes) == cleaned


def test_truncation_that_would_spell_a_device_name_is_repaired() -> None:
    # "CON ééé.md" is fine, but cut to 8 bytes it would read "CON .md", which Windows reserves.
    assert clean_filename("CON ééé.md", max_bytes=8) == "_CON .md"


def test_replacement_and_default_can_be_chosen() -> None:
    assert clean_filename("a:b", replacement="-") == "a-b"
    assert clean_filename("a:b", replacement="") == "ab"
    assert clean_filename("???", replacement="") == "untitled"
    assert clean_filename("", default="summary") == "summary"
    assert clean_filename(".md", default="note") == "note.md"
    assert clean_filename("", default="..") == "untitled"


@pytest.mark.parametrize("replacement", ["/", ":", ".", " ", "\x00", "_____"])
def test_an_unsafe_replacement_is_a_programming_error(replacement: str) -> None:
    with pytest.raises(ValueError, match="replacement"):
        clean_filename("a?b", replacement=replacement)


def test_a_tiny_max_bytes_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        clean_filename("a", max_bytes=4)
