"""read_wechat_articles and summarize_articles against a folder swapped for a symlink to a
folder outside the root while they run (issue 17): articles, their stored images and digests are
written, and digest inputs read, beneath the root's descriptor, so nothing lands outside and
nothing outside is read.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from hostd_testing import call, swapping
from wechat_testlib import ArticleServer, CdnServer, image_settings, plugin_settings, wechat_client

pytestmark = pytest.mark.anyio

ROUNDS = 150
ARTICLE = """---
title: Inside Article
---

# Inside Article

Batteries store solar power for the evening. Prices fell again this year.
"""


def rooted_box(root: Path, tmp_path: Path) -> tuple[Path, Path]:
    """`root/box` (a real folder) and `root/evil` (a symlink to `outside`), for the swapper."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "box").mkdir()
    (root / "evil").symlink_to(outside, target_is_directory=True)
    return root / "box", outside


def files_under(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file())


async def test_articles_never_land_outside_while_the_output_folder_is_swapped(
    hostd_data_dir: Path, hostd_roots: Path, tmp_path: Path, article_server: ArticleServer
) -> None:
    box, outside = rooted_box(hostd_roots, tmp_path)
    saved: list[str] = []
    async with wechat_client(hostd_data_dir, hostd_roots, settings=plugin_settings(article_server)) as client:
        with swapping(box, hostd_roots / "evil") as swaps:
            for number in range(ROUNDS):
                urls = [article_server.url(f"/s/article/{number}-{part}") for part in range(3)]
                envelope = await call(
                    client,
                    "read_wechat_articles",
                    urls=urls,
                    output_dir="box",
                    overwrite=True,
                    concurrency=3,
                )
                if envelope["status"] == "error":
                    assert envelope["error"]["code"] == "PATH_NOT_ALLOWED", envelope["error"]
                    continue
                saved += [item["saved_path"] for item in envelope["items"] if item["status"] == "ok"]
    assert swaps[0] > 10, "the swapper must have raced the calls"
    assert files_under(outside) == [], "an article landed outside the root"
    assert saved, "some calls must win the race"
    assert all(Path(path).is_relative_to(hostd_roots.resolve()) for path in saved)
    inside = {path.name for path in files_under(hostd_roots)}
    assert {Path(path).name for path in saved} <= inside


async def test_digests_never_read_or_land_outside_while_their_folder_is_swapped(
    hostd_data_dir: Path, hostd_roots: Path, tmp_path: Path
) -> None:
    box, outside = rooted_box(hostd_roots, tmp_path)
    (box / "a.md").write_text(ARTICLE, encoding="utf-8")
    (outside / "a.md").write_text(ARTICLE.replace("Inside Article", "STOLEN Article"), encoding="utf-8")
    answers = []
    async with wechat_client(hostd_data_dir, hostd_roots) as client:
        with swapping(box, hostd_roots / "evil") as swaps:
            for number in range(ROUNDS):
                arguments = {
                    "files": ["box/a.md"],
                    "output_path": f"box/digest-{number}.md",
                    "style": "brief",
                    "response_format": "detailed",
                }
                answers.append(await call(client, "summarize_articles", **arguments))
    assert swaps[0] > 10, "the swapper must have raced the calls"
    assert [path.name for path in files_under(outside)] == ["a.md"], "a digest landed outside the root"
    written = [answer for answer in answers if answer["status"] == "success" and answer.get("saved")]
    assert written, "some calls must win the race"
    for path in files_under(hostd_roots):
        assert "STOLEN" not in path.read_text(encoding="utf-8"), f"{path} holds text read outside the root"
    assert all("STOLEN" not in str(answer) for answer in answers)


async def test_images_never_land_outside_while_the_output_folder_is_swapped(
    hostd_data_dir: Path,
    hostd_roots: Path,
    tmp_path: Path,
    article_server: ArticleServer,
    cdn_server: CdnServer,
) -> None:
    box, outside = rooted_box(hostd_roots, tmp_path)
    stored = 0
    async with wechat_client(
        hostd_data_dir, hostd_roots, settings=image_settings(article_server, cdn_server)
    ) as client:
        with swapping(box, hostd_roots / "evil") as swaps:
            for number in range(ROUNDS):
                sources = [cdn_server.url(f"/mmbiz_png/{number}-{n}/640?wx_fmt=png") for n in range(3)]
                query = "&".join(f"src={quote(source, safe='')}" for source in sources)
                arguments = {
                    "urls": [article_server.url(f"/s/gallery?title=Swap&{query}")],
                    "output_dir": "box",
                    "overwrite": True,
                    "images": "local",
                }
                envelope = await call(client, "read_wechat_articles", **arguments)
                if envelope["status"] == "error":
                    assert envelope["error"]["code"] == "PATH_NOT_ALLOWED", envelope["error"]
                    continue
                for item in envelope["items"]:
                    if "images" in item:
                        stored += item["images"]["saved"]
                        reasons = {problem["reason"] for problem in item["images"]["problems"]}
                        assert reasons <= {"write_error"}, reasons
    assert swaps[0] > 10, "the swapper must have raced the calls"
    assert files_under(outside) == [], "an image or article landed outside the root"
    assert stored, "some images must win the race"
