#!/usr/bin/env python3
"""Smoke-test `memdir serve --http` through the official MCP Python SDK's streamable
HTTP client (package `mcp`, 2.3.0): a second real client of the HTTP transport.

Usage: target/ci-tools/venv/bin/python .ci/smoke_http.py path/to/memdir

It makes a tokens file (mode 600), starts `memdir --root TMP serve --http 127.0.0.1:0
--tokens FILE`, reads the URL from the server's "listening on" line, and checks:
a request without the token gets 401 and writes nothing; with it, `initialize`,
`tools/list`, a write, a read, an edit guarded by sha256, a search and the history
(whose actor is the token's NAME); `GET /healthz`; a clean exit on SIGTERM.

Exit status 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

TOKEN = "smoke-" + hashlib.sha256(os.urandom(16)).hexdigest()
TIMEOUT_S = 60


class SmokeFailure(Exception):
    pass


def check(cond: bool, what: str, detail: Any = None) -> None:
    if not cond:
        raise SmokeFailure(what if detail is None else f"{what}\n      got: {detail!r}")
    print(f"   ok: {what}")


def start(binary: str, root: Path, tokens: Path) -> tuple[subprocess.Popen, str, list[str]]:
    env = dict(os.environ, RUST_LOG="memdir=info", XDG_CACHE_HOME=str(root.parent / "cache"))
    proc = subprocess.Popen(
        [binary, "--root", str(root), "serve", "--http", "127.0.0.1:0", "--tokens", str(tokens)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            m = re.search(r"listening on (http://\S+/mcp)", line)
            if m and not url:
                url.append(m.group(1))
                found.set()
        found.set()

    threading.Thread(target=drain, daemon=True).start()
    if not found.wait(20) or not url:
        proc.kill()
        raise SmokeFailure("the server never printed its URL:\n" + "\n".join(lines))
    return proc, url[0], lines


def structured(result: Any) -> dict:
    check(not result.is_error, "the call succeeded", result.content)
    return result.structured_content or {}


async def session_checks(url: str, root: Path) -> None:
    # Without a token: 401, and nothing is written.
    async with httpx2.AsyncClient() as raw:
        r = await raw.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "memory_write",
                             "arguments": {"path": "/memories/nope.md", "content": "x"}}},
            headers={"Accept": "application/json, text/event-stream"},
        )
        check(r.status_code == 401, "no token: HTTP 401", r.status_code)
        check(not (root / "nope.md").exists(), "no token: nothing written")
        health = await raw.get(url.removesuffix("/mcp") + "/healthz")
        check(health.status_code == 200 and health.json() == {"status": "ok"}, "GET /healthz", health.text)

    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                check(init.server_info.name == "memdir", "initialize names the server", init.server_info)
                tools = {t.name for t in (await session.list_tools()).tools}
                check({"memory_write", "memory_read", "memory_search", "memory_history"} <= tools,
                      "tools/list over HTTP", sorted(tools))
                content = "# HTTP smoke\nteam memory over HTTP: ключ 東京\n"
                w = structured(await session.call_tool(
                    "memory_write", {"path": "/memories/smoke/http.md", "content": content}))
                check(w.get("content_sha256") == hashlib.sha256(content.encode()).hexdigest(),
                      "memory_write returns the sha256 of the content", w)
                r = structured(await session.call_tool("memory_read", {"path": "/memories/smoke/http.md"}))
                check(r.get("content") == content, "memory_read returns the content", r)
                e = structured(await session.call_tool("memory_edit", {
                    "path": "/memories/smoke/http.md", "old_str": "over HTTP", "new_str": "over Streamable HTTP",
                    "expected_sha256": r["content_sha256"]}))
                check(e.get("version") == 2, "memory_edit guarded by sha256", e)
                stale = await session.call_tool("memory_write", {
                    "path": "/memories/smoke/http.md", "content": "x", "expected_sha256": r["content_sha256"]})
                check(stale.is_error, "a stale sha256 is refused", stale.content)
                s = structured(await session.call_tool("memory_search", {"query": "東京"}))
                check(any(h.get("path") == "/memories/smoke/http.md" for h in s.get("hits", [])),
                      "memory_search finds a CJK word", s)
                h = structured(await session.call_tool("memory_history", {"path": "/memories/smoke/http.md"}))
                actors = {v.get("actor") for v in h.get("versions", [])}
                check(actors == {"smoke"}, "history records the token's NAME as actor", actors)
    check((root / "smoke/http.md").read_text() == content.replace("over HTTP", "over Streamable HTTP"),
          "the file on disk holds the edit")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="memdir-http-smoke-") as tmp:
        root = Path(tmp) / "store"
        tokens = Path(tmp) / "tokens"
        tokens.write_text(f"# smoke test\nsmoke {TOKEN}\n")
        tokens.chmod(0o600)
        proc, url, lines = start(binary, root, tokens)
        print(f"memdir at {url}")
        try:
            anyio.run(lambda: _with_timeout(session_checks(url, root)))
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(30)
            check(code == 0, "exits cleanly on SIGTERM", code)
            log = "\n".join(lines)
            check(TOKEN not in log, "the token never appears in the log")
            check("ключ" not in log and "東京" not in log, "memory contents never appear in the log")
        except Exception as exc:  # noqa: BLE001 - report and fail
            if proc.poll() is None:
                proc.kill()
            print(f"FAIL: {exc}")
            if not isinstance(exc, SmokeFailure):
                traceback.print_exc()
            print("server stderr:\n" + "\n".join(lines))
            return 1
    print("HTTP smoke: all checks passed")
    return 0


async def _with_timeout(coro: Any) -> None:
    with anyio.fail_after(TIMEOUT_S):
        await coro


if __name__ == "__main__":
    sys.exit(main())
