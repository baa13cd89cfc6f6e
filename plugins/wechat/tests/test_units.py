"""Small pieces on their own: URL checks, names, front matter, page data, word counts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hostd_wechat.frontmatter import render_front_matter, split_front_matter, word_count
from hostd_wechat.naming import NameReservations, file_name, pattern_problem
from hostd_wechat.page_data import decode_js_string, read_page_data
from hostd_wechat.parse import article_id_from_url, to_china_iso
from hostd_wechat.urls import UrlPrefix, check_url

from hostd import Text

WECHAT = [UrlPrefix.parse("https://mp.weixin.qq.com/s")]


@pytest.mark.parametrize(
    "url",
    [
        "https://mp.weixin.qq.com/s/abc",
        "https://mp.weixin.qq.com/s?__biz=x&mid=1",
        "https://MP.weixin.qq.com:443/s/x",
    ],
)
def test_wechat_links_pass(url: str) -> None:
    assert check_url(url, WECHAT) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://mp.weixin.qq.com/s/abc",
        "https://mp.weixin.qq.com.evil.com/s/abc",
        "https://evil.com/mp.weixin.qq.com/s/abc",
        "https://user@mp.weixin.qq.com/s/abc",
        "https://mp.weixin.qq.com:8443/s/abc",
        "https://mp.weixin.qq.com/sx",
        "https://mp.weixin.qq.com/s/../mp/profile",
        "https://mp.weixin.qq.com/s/%2e%2e/mp/profile",
        "https://mp.weixin.qq.com\\@evil.com/s/x",
        "file:///etc/passwd",
        "mp.weixin.qq.com/s/abc",
        "https://mp.weixin.qq.com/s/a\nb",
        "https://mp.weixin.qq.com:99999/s/x",
        "",
    ],
)
def test_other_links_are_refused(url: str) -> None:
    refusal = check_url(url, WECHAT)
    assert refusal is not None
    # Said in both languages: the item's hint carries it into a zh server's answer.
    words = re.sub(r"'[^']*'|URL|https://", "", refusal.zh)  # quoted values, URL, https:// read the same
    assert refusal.en
    assert refusal.zh
    assert not re.search(r"[A-Za-z]{3,}", words)


def test_bad_prefixes_are_refused_by_the_settings() -> None:
    from hostd_wechat.models import Settings
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        Settings(allowed_url_prefixes=["ftp://example.com/s"])
    assert Settings().allowed_url_prefixes == ["https://mp.weixin.qq.com/s"]


def test_article_ids_from_both_url_shapes() -> None:
    assert article_id_from_url("https://mp.weixin.qq.com/s/KDWh_qGp") == "KDWh_qGp"
    assert article_id_from_url("https://mp.weixin.qq.com/s?__biz=M==&mid=22&idx=1&sn=abc123#rd") == "abc123"
    assert article_id_from_url("https://mp.weixin.qq.com/s?__biz=M==&amp;mid=22&amp;idx=3") == "22_3"


def test_times_become_iso_in_china_time() -> None:
    assert to_china_iso("1762747210") == "2025-11-10T12:00:10+08:00"
    assert to_china_iso("2025-11-05 18:30") == "2025-11-05T18:30:00+08:00"
    assert to_china_iso("2017-07-31") == "2017-07-31T00:00:00+08:00"
    assert to_china_iso("2025-01-01T00:00:00Z") == "2025-01-01T08:00:00+08:00"
    assert to_china_iso("yesterday") is None


def test_pattern_accepts_only_the_three_placeholders() -> None:
    assert pattern_problem("{date}_{title}-{account_name}") is None
    assert pattern_problem("{title}{id}") == Text(en="unknown placeholder {id}", zh="未知的占位符 {id}")
    assert pattern_problem("{title") == Text(en="unbalanced braces", zh="花括号不成对")
    assert pattern_problem("  ") == Text(en="empty pattern", zh="模式为空")
    assert pattern_problem("{0}") is not None
    assert pattern_problem("{title.__class__}") is not None


def test_names_are_safe_and_long_titles_fit() -> None:
    name = file_name("{title}", date="20250101", title="标题" * 200, account_name="")
    assert name.endswith(".md")
    assert len(name.encode("utf-8")) <= 240
    assert file_name("{title}", date="d", title="", account_name="") == "untitled.md"
    assert "/" not in file_name("{account_name}/{title}", date="d", title="../x", account_name="a")


def test_reservations_never_hand_out_a_name_twice(tmp_path: Path) -> None:
    reservations = NameReservations()
    (tmp_path / "a.md").write_text("x")
    assert reservations.reserve(tmp_path, "a.md", overwrite=False).name == "a_2.md"
    assert reservations.reserve(tmp_path, "a.md", overwrite=False).name == "a_3.md"
    assert reservations.reserve(tmp_path, "b.md", overwrite=True).name == "b.md"
    assert reservations.reserve(tmp_path, "b.md", overwrite=True).name == "b_2.md"


def test_word_count_counts_cjk_characters_and_latin_words() -> None:
    assert word_count("你好世界 hello world, it's 2025!") == 4 + 3 + 1
    assert word_count("") == 0


def test_front_matter_round_trip_and_fallbacks() -> None:
    metadata = {"title": "标题: with colon", "word_count": 3, "author": ""}
    parsed, body, form = split_front_matter(render_front_matter(metadata) + "Body")
    assert (parsed, body, form) == (metadata, "Body", "yaml")
    lines, body, form = split_front_matter("title: T\naccount_name: A\n\nText")
    assert (lines, body, form) == ({"title": "T", "account_name": "A"}, "Text", "lines")
    assert split_front_matter("Just text: with a colon\n") == ({}, "Just text: with a colon\n", "none")
    broken, _, form = split_front_matter("---\ntitle: [x\nauthor: B\n---\nBody")
    assert form == "lines"
    assert broken["author"] == "B"


def test_page_data_reads_object_fields_but_not_nested_ones() -> None:
    script = """
    window.cgiDataNew = {
        base_resp: { ret: '0' * 1, errmsg: JsDecode('nested') },
        nick_name: JsDecode('Acc\\x26Co'),
        title: JsDecode('It\\'s'),
        ori_create_time: '1762338600' * 1,
    };
    window.picture_page_info_list = [
        { cdn_url: 'https://img/1?a=1\\x26amp;b=2', watermark_info: { cdn_url: 'https://wm' } },
        { cdn_url: 'https://img/2' },
    ];
    var ct = "1501502740"*1;
    d.title = "legacy";
    album = { title: 'not ours' };
    """
    data = read_page_data([script])
    assert data.cgi["nick_name"] == "Acc&Co"
    assert data.cgi["title"] == "It's"
    assert data.cgi["ori_create_time"] == "1762338600"
    assert "errmsg" not in data.cgi
    assert data.picture_urls == ["https://img/1?a=1&b=2", "https://img/2"]
    assert data.first("ct") == "1501502740"
    assert data.first("title") == "legacy"


def test_js_strings_decode_like_the_page_would() -> None:
    assert decode_js_string(r"a\x0ab\u4e2d\'c\\d") == "a\nb中'c\\d"
    assert decode_js_string(r"\ud800") == "\ufffd"
