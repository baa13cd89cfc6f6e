"""Failures of the environment are errors, not crashes: a data folder the server cannot write,
a port in use. Real served processes, real sockets, real file systems (tests run as root, which
ignores permission bits: a data folder under a regular file gives ENOTDIR for real, and a
tmpfs in a private mount namespace gives EROFS and ENOSPC for real)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostd.core.environment import EXIT_ENVIRONMENT
from hostd_testing import write_config
from hostd_testing.raw_stdio import handshake, raw_stdio_server, tools_call


def _hostd(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hostd", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "HOSTD_CACHE_DIR": "off", **(env or {})},
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port some other process's socket holds, bound and listening."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    try:
        yield holder.getsockname()[1]
    finally:
        holder.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_data_folder_gone_under_a_served_process_answers_storage_unavailable(tmp_path: Path) -> None:
    """It was INTERNAL ("a bug in the server") with a traceback ending in an OSError."""
    data = tmp_path / "data"
    config = write_config(tmp_path, ["tasks"], config={"data_dir": str(data)})
    with raw_stdio_server(config, env={"HOSTD_CACHE_DIR": "off"}) as server:
        server.send(*handshake("t"))
        server.read_until({1})
        shutil.rmtree(data)
        data.write_text("a file where the data folder was", encoding="utf-8")  # ENOTDIR, root or not
        server.send(tools_call(2, "create_task", {"title": "write it down"}))
        answer = {message.get("id"): message for message in server.read_until({2})}[2]
        _, err = server.finish()
    envelope = answer["result"]["structuredContent"]
    envelope["metadata"].pop("execution_time_ms")
    path = str(data / "tasks")
    message = f"The server cannot write to {path}: a part of the path is a file, not a folder."
    assert envelope == {
        "status": "error",
        "message": message,
        "error": {
            "code": "STORAGE_UNAVAILABLE",
            "message": message,
            "details": {"reason": "ENOTDIR", "path": path},
            "hint": "Point data_dir ($HOSTD_DATA_DIR) at a folder, then retry.",
        },
        "metadata": {},
    }
    assert "Traceback" not in err.decode()
    assert "INTERNAL" not in err.decode()


def test_the_answer_is_in_chinese_for_a_chinese_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    config = write_config(tmp_path, ["tasks"], config={"data_dir": str(data), "language": "zh"})
    with raw_stdio_server(config, env={"HOSTD_CACHE_DIR": "off"}) as server:
        server.send(*handshake("t"))
        server.read_until({1})
        shutil.rmtree(data)
        data.write_text("x", encoding="utf-8")
        server.send(tools_call(2, "create_task", {"title": "记下来"}))
        answer = {message.get("id"): message for message in server.read_until({2})}[2]
    error = answer["result"]["structuredContent"]["error"]
    path = str(data / "tasks")
    assert error == {
        "code": "STORAGE_UNAVAILABLE",
        "message": f"服务器无法写入 {path}：路径中有一部分是文件而非文件夹。",
        "details": {"reason": "ENOTDIR", "path": path},
        "hint": "请将 data_dir（$HOSTD_DATA_DIR）指向一个文件夹后重试。",
    }


def test_serve_refuses_a_data_folder_it_cannot_write_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a folder", encoding="utf-8")
    data = tmp_path / "afile" / "data"
    config = write_config(tmp_path, ["tasks"], config={"data_dir": str(data)})
    done = _hostd("serve", "--config", str(config))
    assert (done.returncode, done.stdout) == (EXIT_ENVIRONMENT, "")
    assert done.stderr == (
        f"hostd: data_dir: the data folder {data} cannot be written ({data}: Not a directory (ENOTDIR)): "
        "give the server's user write access, or point data_dir ($HOSTD_DATA_DIR) at a writable folder\n"
    )


# --- read-only and full file systems: a tmpfs in a mount namespace of the served process's own --


def _in_own_mount_namespace(mount_options: str, folder: Path, command: list[str]) -> list[str]:
    script = f'mount -t tmpfs -o {mount_options} hostd-test "$1" && shift && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(folder), *command]


@pytest.fixture
def mount_namespaces(tmp_path: Path) -> None:
    if shutil.which("unshare") is None or shutil.which("nsenter") is None:
        pytest.skip("unshare/nsenter are not installed")
    (tmp_path / "m").mkdir()
    tried = subprocess.run(
        _in_own_mount_namespace("size=64k", tmp_path / "m", ["true"]), capture_output=True, check=False
    )
    if tried.returncode != 0:
        pytest.skip(f"no mount namespaces here: {tried.stderr.decode().strip()}")


@pytest.mark.usefixtures("mount_namespaces")
@pytest.mark.parametrize("kind", ["read-only", "full"])
def test_a_read_only_or_full_file_system_answers_storage_unavailable(tmp_path: Path, kind: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    config = write_config(tmp_path, ["tasks"], config={"data_dir": str(data)})
    command = [sys.executable, "-m", "hostd", "serve", "--config", str(config)]
    options = "size=1m,nr_inodes=16"
    with raw_stdio_server(
        command=_in_own_mount_namespace(options, data, command), env={"HOSTD_CACHE_DIR": "off"}
    ) as server:
        server.send(*handshake("t"))
        server.read_until({1})  # serving: the start-up check wrote and removed its file
        enter = ["nsenter", "-t", str(server.process.pid), "-m"]
        if kind == "read-only":
            subprocess.run([*enter, "mount", "-o", "remount,ro", str(data)], check=True)
        else:  # every inode taken: a new folder or file is ENOSPC
            fill = f'i=0; while touch "{data}/f$i" 2>/dev/null; do i=$((i+1)); done'
            subprocess.run([*enter, "sh", "-c", fill], check=True)
        server.send(tools_call(2, "create_task", {"title": "write it down"}))
        answer = {message.get("id"): message for message in server.read_until({2})}[2]
    envelope = answer["result"]["structuredContent"]
    path = str(data / "tasks")
    if kind == "read-only":
        message = f"The server cannot write to {path}: the file system is read-only."
        hint = "Mount it writable or point data_dir ($HOSTD_DATA_DIR) at a writable folder, then retry."
        reason = "EROFS"
    else:
        message = f"The server cannot write to {path}: the disk is full."
        hint = "Free some space on that disk, then retry."
        reason = "ENOSPC"
    assert envelope["error"] == {
        "code": "STORAGE_UNAVAILABLE",
        "message": message,
        "details": {"reason": reason, "path": path},
        "hint": hint,
    }


# --- ports in use ---------------------------------------------------------------------------


def test_serve_on_a_busy_port_says_so_in_one_line_and_never_listening(tmp_path: Path, busy_port: int) -> None:
    config = write_config(tmp_path, ["tasks"])
    done = _hostd("serve", "--config", str(config), "--transport", "http", "--port", str(busy_port))
    assert (done.returncode, done.stdout) == (EXIT_ENVIRONMENT, "")
    assert done.stderr == (
        f"hostd: transport.port: port {busy_port} on 127.0.0.1 is already in use by another process: "
        "stop it, or choose another port with transport.port\n"
    )


def test_a_busy_metrics_port_names_its_key(tmp_path: Path, busy_port: int) -> None:
    transport = {"type": "http", "port": _free_port(), "metrics": {"port": busy_port}}
    config = write_config(
        tmp_path, config={"profiles": {"default": {"plugins": ["tasks"], "transport": transport}}}
    )
    done = _hostd("serve", "--config", str(config))
    assert (done.returncode, done.stdout) == (EXIT_ENVIRONMENT, "")
    assert done.stderr == (
        f"hostd: transport.metrics.port: port {busy_port} on 127.0.0.1 is already in use by another "
        "process: stop it, or choose another port with transport.metrics.port\n"
    )


def test_web_on_a_busy_port_says_so_in_one_line(tmp_path: Path, busy_port: int) -> None:
    config = write_config(tmp_path, ["tasks"])
    done = _hostd("web", "--config", str(config), "--port", str(busy_port), "--no-browser")
    assert (done.returncode, done.stdout) == (EXIT_ENVIRONMENT, "")
    assert done.stderr == (
        f"hostd: --port: port {busy_port} on 127.0.0.1 is already in use by another process: "
        "stop it, or choose another port with --port\n"
    )


def test_listening_is_an_info_line_shown_by_default_once_bound(tmp_path: Path) -> None:
    """Normal events are INFO (WARNING is for what needs attention), and the operator still sees
    the start-up line without -v. The port is taken by the time the line is written."""
    port = _free_port()
    config = write_config(tmp_path, ["tasks"])
    command = [sys.executable, "-m", "hostd", "serve", "--config", str(config), "--transport", "http"]
    with subprocess.Popen(
        [*command, "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOSTD_CACHE_DIR": "off"},
    ) as process:
        try:
            assert process.stderr is not None
            before = [process.stderr.readline() for _ in range(1)]
            while before[-1] and "listening" not in before[-1] and len(before) < 50:
                before.append(process.stderr.readline())
            line = before[-1]
            with socket.socket() as other, pytest.raises(OSError, match="in use"):
                other.bind(("127.0.0.1", port))
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert line == (  # what came before it, if anything: other start-up lines
        f"hostd INFO hostd.transport: hostd listening on http://127.0.0.1:{port}/mcp "
        "(Streamable HTTP) and /sse (legacy SSE)\n"
    ), before
