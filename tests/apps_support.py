"""What the views-inside-the-chat browser tests share: the reference host side of MCP Apps
(``@modelcontextprotocol/ext-apps``'s ``AppBridge`` and ``PostMessageTransport``, from npm into the
shared npm test cache, bundled once for the page with esbuild), and a host page that shows a view
in a sandboxed frame as clients do, handing its ``tools/call`` and ``resources/read`` requests to
the test's MCP client.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from hostd_testing import npm_installed

#: The npm packages the host side needs (ext-apps' own peers), and the bundler.
PACKAGES = (
    ("@modelcontextprotocol/ext-apps", "2.0.4"),
    ("@modelcontextprotocol/client", "2.4.0"),
    ("@modelcontextprotocol/core", "2.4.0"),
    ("zod", "4.6.7"),
    ("esbuild", "0.25.12"),
)
#: The extension's protocol version that ext-apps 2.0.4 speaks (its LATEST_PROTOCOL_VERSION).
SPEC_VERSION = "2026-01-26"
#: Their npm folder (of their own: a folder another test installs into is never run from).
NPM_CACHE = Path.home() / ".cache" / "hostd-tests" / "npm-apps"


def bridge_bundle() -> str:
    """``AppBridge`` and ``PostMessageTransport`` as one script defining ``window.ExtApps``."""
    from filelock import FileLock

    npm_installed(NPM_CACHE, *(f"{name}@{version}" for name, version in PACKAGES))
    built_from = "-".join(version for _, version in PACKAGES)
    bundle = NPM_CACHE / f"hostd-ext-apps-bridge-{built_from}.js"
    with FileLock(str(NPM_CACHE / ".bundle.lock")):
        if not bundle.exists():
            entry = NPM_CACHE / "hostd-ext-apps-entry.mjs"
            entry.write_text(
                "export { AppBridge, PostMessageTransport }"
                ' from "@modelcontextprotocol/ext-apps/app-bridge";\n',
                encoding="utf-8",
            )
            done = subprocess.run(
                [
                    str(NPM_CACHE / "node_modules" / ".bin" / "esbuild"),
                    str(entry),
                    "--bundle",
                    "--format=iife",
                    "--global-name=ExtApps",
                    "--log-level=error",
                    f"--outfile={bundle}",
                ],
                cwd=NPM_CACHE,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr[-2000:]
    return bundle.read_text(encoding="utf-8")


#: The host page: one sandboxed frame (scripts only: an opaque origin, as a client's separate
#: origin is), the view's HTML as its document, the AppBridge on the frame's window. Tool calls
#: go to ``hostCallTool`` and resource reads to ``hostReadResource``, both bound by the test to
#: its MCP client.
HOST_SCRIPT = """
window.showView = async function (html, input, result, context) {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("title", "view");
  frame.style.cssText = "width:100%;border:0;display:block;height:400px";
  document.getElementById("host").appendChild(frame);
  document.body.classList.toggle("dark", context.theme === "dark");
  const bridge = new ExtApps.AppBridge(null, {name: "hostd-test-host", version: "1"},
    {serverTools: {}, serverResources: {}}, {hostContext: context});
  window.bridge = bridge;
  window.viewCalls = [];
  bridge.oncalltool = async (params) => {
    window.viewCalls.push(params.name);
    return JSON.parse(await window.hostCallTool(JSON.stringify(params)));
  };
  window.viewReads = [];
  bridge.onreadresource = async (params) => {
    window.viewReads.push(params.uri);
    return JSON.parse(await window.hostReadResource(JSON.stringify(params)));
  };
  bridge.onsizechange = (size) => { if (size.height) frame.style.height = size.height + "px"; };
  window.viewReady = new Promise((resolve) => {
    bridge.oninitialized = async () => {
      await bridge.sendToolInput({arguments: input});
      await bridge.sendToolResult(result);
      resolve(true);
    };
  });
  await bridge.connect(new ExtApps.PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.srcdoc = html;
  return true;
};
"""


def host_page(bundle: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>test host</title>"
        "<style>body{margin:0;background:#fff}body.dark{background:#1b1d21}</style></head>"
        f"<body><div id='host'></div><script>{bundle}</script><script>{HOST_SCRIPT}</script></body></html>"
    )


def result_json(result: Any) -> dict[str, Any]:
    """A ``CallToolResult`` as its wire JSON."""
    dumped: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped
