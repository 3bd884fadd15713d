#!/usr/bin/env python3
"""Smoke-test an installed `memdir` command (from a wheel or the npm launcher) without Rust.

Usage: target/ci-tools/venv/bin/python .ci/smoke_wheel.py COMMAND

COMMAND is what a user would type (`memdir`, looked up on PATH) or a path to it. The
check is about installation, not behaviour (the other smoke checks and the test suite
cover that): with no cargo on PATH, the installed command starts as an MCP server over
stdio, answers `tools/list` through the official MCP Python SDK, and a `memory_write`
then `memory_read` round-trips through a plain file in a temporary store. The server
gets HOME and the XDG folders in the temporary directory, so nothing touches the user's
home. Written against mcp 2.3.0 (see .ci/smoke_python.py for the SDK calls used).

Exit status 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TIMEOUT_S = 60
NOTE = "/memories/install/smoke.md"
CONTENT = "installed without Rust: ok\n"
TOOLS = {"memory_list", "memory_search", "memory_read", "memory_write", "memory_edit", "memory_delete"}


def check(cond: bool, what: str, detail: object = None) -> None:
    if not cond:
        raise SystemExit(f"FAIL: {what}" + ("" if detail is None else f"\n      got: {detail!r}"))
    print(f"   ok: {what}")


def text_of(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def smoke(binary: str, tmp: Path) -> None:
    root = tmp / "store"
    home = tmp / "home"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    params = StdioServerParameters(command=binary, args=["--root", str(root)], env=env, cwd=str(tmp))
    with open(tmp / "server-stderr.log", "w", encoding="utf-8") as errlog:
        with anyio.fail_after(TIMEOUT_S):
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    info = init.server_info
                    print(f"   server: {info.name} {info.version}, protocol {init.protocol_version}")
                    check(info.name == "memdir", "the server says it is memdir", info.name)

                    names = {t.name for t in (await session.list_tools()).tools}
                    check(TOOLS <= names, "tools/list offers the memory_* tools", sorted(names))

                    written = await session.call_tool("memory_write", {"path": NOTE, "content": CONTENT})
                    check(not written.is_error, "memory_write succeeds", text_of(written))
                    on_disk = root / "install" / "smoke.md"
                    check(
                        on_disk.is_file() and on_disk.read_text(encoding="utf-8") == CONTENT,
                        "the memory is a plain file in the store with the written bytes",
                    )

                    read_back = await session.call_tool("memory_read", {"path": NOTE})
                    check(not read_back.is_error, "memory_read succeeds", text_of(read_back))
                    content = (read_back.structured_content or {}).get("content")
                    check(content == CONTENT, "memory_read returns what was written", content)


def main() -> int:
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} COMMAND", file=sys.stderr)
        return 2
    cargo = shutil.which("cargo")
    check(cargo is None, "no cargo on PATH (the installed command needs no Rust toolchain)", cargo)
    binary = shutil.which(sys.argv[1])
    check(binary is not None, f"`{sys.argv[1]}` is an executable command", os.environ["PATH"])
    print(f"   {sys.argv[1]} -> {binary}")
    with tempfile.TemporaryDirectory(prefix="memdir-install-smoke.") as tmp:
        try:
            anyio.run(smoke, binary, Path(tmp))
        except BaseException as e:  # noqa: BLE001 - show the server's side of any failure
            log = (Path(tmp) / "server-stderr.log").read_text(encoding="utf-8", errors="replace")
            print("---- server stderr ----\n" + log, file=sys.stderr)
            if isinstance(e, SystemExit):
                raise
            raise SystemExit(f"FAIL: {type(e).__name__}: {e}") from e
    print("install smoke: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
