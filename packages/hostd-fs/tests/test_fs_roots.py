"""effective_roots: configured ∩ client roots, else either, else a working directory that is
neither the file-system root nor the home folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostd_fs import FsError, effective_roots


def test_configured_roots_alone_are_expanded_and_resolved(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    assert effective_roots([tmp_path / "alias", "~/notes"], None) == [real, Path.home().resolve() / "notes"]


def test_client_roots_alone_accept_file_uris_and_paths(tmp_path: Path) -> None:
    roots = effective_roots(None, ["file:///a/b%20c", "file://localhost/srv/x", str(tmp_path)])
    assert roots == [Path("/a/b c"), Path("/srv/x"), tmp_path.resolve()]


def test_non_file_uris_are_ignored(tmp_path: Path) -> None:
    client = ["vscode-remote://ssh/home/u", "https://example.com/x", "file://otherhost/share", str(tmp_path)]
    assert effective_roots(None, client) == [tmp_path.resolve()]


def test_client_roots_that_are_all_foreign_count_as_none(tmp_path: Path) -> None:
    assert effective_roots(None, ["https://example.com/"], cwd=tmp_path) == [tmp_path.resolve()]


@pytest.mark.parametrize(
    ("configured", "client", "expected"),
    [
        (["/w"], ["/w/project"], ["/w/project"]),  # the client's deeper folder wins
        (["/w/project"], ["/w"], ["/w/project"]),  # the configured deeper folder wins
        (["/w"], ["/w"], ["/w"]),
        (["/b", "/a"], ["/a/x", "/b/y", "/c"], ["/b/y", "/a/x"]),  # configured order, /c dropped
        (["/a", "/a/x"], ["/a/x"], ["/a/x"]),  # the same folder twice is listed once
        (["/w"], ["file:///w/my%20project"], ["/w/my project"]),
    ],
)
def test_intersection_keeps_the_deeper_folder_of_each_overlapping_pair(
    configured: list[str], client: list[str], expected: list[str]
) -> None:
    assert effective_roots(configured, client) == [Path(p) for p in expected]


def test_boundary_aware_intersection_does_not_match_a_shared_prefix() -> None:
    with pytest.raises(FsError) as caught:
        effective_roots(["/work/a"], ["/work/abc"])
    assert caught.value.reason == "NO_ROOT"


def test_disjoint_roots_raise_no_root_saying_they_do_not_overlap() -> None:
    with pytest.raises(FsError) as caught:
        effective_roots(["/notes"], ["file:///projects/app"])
    error = caught.value
    assert (error.code, error.reason) == ("PATH_NOT_ALLOWED", "NO_ROOT")
    assert error.hint is not None
    assert "do not overlap" in error.hint.en
    assert "/notes" in error.hint.en
    assert "没有重叠" in error.hint.zh


def test_without_any_roots_the_working_directory_is_used(tmp_path: Path) -> None:
    assert effective_roots(None, None, cwd=tmp_path) == [tmp_path.resolve()]
    assert effective_roots([], [], cwd=str(tmp_path)) == [tmp_path.resolve()]


def test_the_process_working_directory_is_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert effective_roots(None, None) == [tmp_path.resolve()]


@pytest.mark.parametrize("cwd", [Path("/"), Path.home(), Path("~")], ids=["filesystem-root", "home", "tilde"])
def test_root_and_home_are_never_implicit(cwd: Path) -> None:
    with pytest.raises(FsError) as caught:
        effective_roots(None, None, cwd=cwd)
    error = caught.value
    assert (error.code, error.reason) == ("PATH_NOT_ALLOWED", "NO_ROOT")
    assert error.hint is not None
    assert "allowed_roots" in error.hint.en
    assert "allowed_roots" in error.hint.zh


def test_root_and_home_may_still_be_configured_explicitly() -> None:
    assert effective_roots(["/"], None) == [Path("/")]
    assert effective_roots(None, ["~"]) == [Path.home().resolve()]


def test_a_configured_root_that_is_a_symlink_loop_is_a_path_error(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(FsError) as caught:
        effective_roots([str(loop)], None)
    assert caught.value.reason == "SYMLINK_LOOP"  # the same answer as a looping target path
