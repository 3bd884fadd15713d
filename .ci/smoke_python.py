#!/usr/bin/env python3
"""Smoke-test a memdir binary through the official MCP Python SDK (package `mcp`).

Usage: target/ci-tools/venv/bin/python .ci/smoke_python.py path/to/memdir

Written against mcp 2.3.0: `mcp.client.stdio.stdio_client(StdioServerParameters)`
yields a (read, write) stream pair; `mcp.ClientSession(read, write)` is entered
as an async context manager, then `initialize()`, `list_tools()`,
`call_tool(name, arguments)`. A CallToolResult has `.content`,
`.structured_content` and `.is_error`; for a non-error result the SDK also
validates `structured_content` against the tool's declared outputSchema and
raises RuntimeError when it does not conform.

Exit status 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import anyio
import mcp
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

EXPECTED_TOOLS = {
    "memory_list",
    "memory_read",
    "memory_write",
    "memory_edit",
    "memory_delete",
    "memory_search",
}
OVERALL_TIMEOUT_S = 120
CALL_TIMEOUT_S = 30

NOTE = "/memories/smoke/python.md"
CONTENT = "# Python SDK smoke\nalpha line\nbeta line: café ü 日本\ngamma line\n"
EDITED = "# Python SDK smoke\nalpha line\nBETA EDITED by python\ngamma line\n"


class SmokeFailure(Exception):
    pass


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check(cond: bool, what: str, detail: Any = None) -> None:
    if not cond:
        msg = what if detail is None else f"{what}\n      got: {detail!r}"
        raise SmokeFailure(msg)
    print(f"   ok: {what}")


def text_of(result: mcp.types.CallToolResult) -> str:
    return "".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", None) == "text")


class Smoke:
    def __init__(self, session: ClientSession, root: Path) -> None:
        self.session = session
        self.root = root
        self.calls = 0

    async def call(self, name: str, args: dict[str, Any]) -> mcp.types.CallToolResult:
        self.calls += 1
        print(f"\n-- [{self.calls}] tools/call {name} {args!r}")
        try:
            result = await self.session.call_tool(name, args, read_timeout_seconds=CALL_TIMEOUT_S)
        except mcp.MCPError as e:
            raise SmokeFailure(
                f"{name}: server answered with a JSON-RPC error instead of a tool result: "
                f"code={e.error.code} message={e.error.message!r} data={e.error.data!r}"
            ) from e
        except RuntimeError as e:  # the SDK's outputSchema validation
            raise SmokeFailure(f"{name}: the SDK rejected the result: {e}") from e
        return result

    async def ok_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await self.call(name, args)
        check(not result.is_error, f"{name} returned a non-error result", text_of(result))
        sc = result.structured_content
        check(isinstance(sc, dict), f"{name}: structuredContent is a JSON object", sc)
        check(text_of(result).strip() != "", f"{name}: has a non-empty text content block", result.content)
        return sc

    async def error_call(self, name: str, args: dict[str, Any], what: str) -> mcp.types.CallToolResult:
        result = await self.call(name, args)
        check(result.is_error is True, what, result.model_dump(by_alias=True, exclude_none=True))
        check(text_of(result).strip() != "", f"{name}: the error result explains itself in its text content")
        print(f"      (error text: {text_of(result).strip()[:160]!r})")
        return result

    async def run(self) -> None:
        print("\n== initialize")
        init = await self.session.initialize()
        info = init.server_info
        print(f"   server: {info.name} {info.version}, protocol {init.protocol_version}")
        check(init.capabilities.tools is not None, "server advertises the tools capability", init.capabilities)

        print("\n== list_tools")
        listed = await self.session.list_tools()
        names = {t.name for t in listed.tools}
        check(EXPECTED_TOOLS <= names, "all six memory_* tools are listed", sorted(names))
        for tool in listed.tools:
            if tool.name in EXPECTED_TOOLS:
                check(
                    tool.input_schema.get("type") == "object",
                    f"{tool.name}: inputSchema is an object schema",
                    tool.input_schema,
                )
                check(bool(tool.description), f"{tool.name}: has a description")
        with_output = sorted(t.name for t in listed.tools if t.output_schema is not None)
        print(f"   tools declaring an outputSchema (validated by the SDK on each call): {with_output}")

        print("\n== write -> read -> edit -> read -> delete -> read round trip")
        sc = await self.ok_call("memory_write", {"path": NOTE, "content": CONTENT})
        check(sc.get("path") == NOTE, f"write: path == {NOTE}", sc.get("path"))
        check(sc.get("created") is True, "write: created is true", sc.get("created"))
        check(sc.get("content_sha256") == sha256(CONTENT), "write: content_sha256 == hashlib.sha256(content)", sc)
        check(sc.get("size_bytes") == len(CONTENT.encode("utf-8")), "write: size_bytes is the UTF-8 length", sc)
        on_disk = [p for p in self.root.rglob("python.md") if p.is_file()]
        check(
            len(on_disk) == 1 and on_disk[0].read_text(encoding="utf-8") == CONTENT,
            "write: the memory is one plain file under --root with exactly the written bytes",
            [str(p) for p in on_disk],
        )

        sc = await self.ok_call("memory_read", {"path": NOTE})
        check(sc.get("content") == CONTENT, "read: content is exactly what was written", sc.get("content"))
        check(sc.get("content_sha256") == sha256(CONTENT), "read: content_sha256 == hashlib.sha256(content)", sc)
        check(sc.get("size_bytes") == len(CONTENT.encode("utf-8")), "read: size_bytes", sc.get("size_bytes"))
        check(
            (sc.get("total_lines"), sc.get("start_line"), sc.get("end_line")) == (4, 1, 4),
            "read: total_lines=4 start_line=1 end_line=4",
            sc,
        )
        for key in ("updated_at", "age_days"):
            check(key in sc, f"read: has {key}", sorted(sc))

        result = await self.call("memory_read", {"path": NOTE, "view_range": [2, 3]})
        check(not result.is_error, "read with view_range [2, 3] is not an error", text_of(result))
        sc = result.structured_content or {}
        check(
            (sc.get("start_line"), sc.get("end_line"), sc.get("total_lines")) == (2, 3, 4),
            "read view_range: start_line=2 end_line=3 total_lines=4",
            sc,
        )
        text = text_of(result)
        check(
            "     2\talpha line" in text and "     3\tbeta line: café ü 日本" in text and "gamma" not in text,
            "read view_range: text shows lines 2-3 as 6-column number, TAB, line (and not line 4)",
            text,
        )

        sc = await self.ok_call("memory_read", {"path": "smoke/python.md"})
        check(sc.get("path") == NOTE, "read of a relative path resolves in the first store", sc.get("path"))

        sc = await self.ok_call(
            "memory_edit", {"path": NOTE, "old_str": "beta line: café ü 日本", "new_str": "BETA EDITED by python"}
        )
        check(sc.get("path") == NOTE, f"edit: path == {NOTE}", sc.get("path"))
        check(sc.get("content_sha256") == sha256(EDITED), "edit: content_sha256 == hashlib.sha256(edited)", sc)
        check(sc.get("size_bytes") == len(EDITED.encode("utf-8")), "edit: size_bytes", sc.get("size_bytes"))
        check(isinstance(sc.get("snippet"), str), "edit: has a snippet", sc)

        sc = await self.ok_call("memory_read", {"path": NOTE})
        check(sc.get("content") == EDITED, "read after edit: content has the new text", sc.get("content"))
        check(sc.get("content_sha256") == sha256(EDITED), "read after edit: content_sha256 matches", sc)

        sc = await self.ok_call("memory_list", {"path": "/memories/smoke/"})
        entries = sc.get("entries")
        check(isinstance(entries, list), "list: entries is a list", sc)
        mine = [e for e in entries if e.get("path") == NOTE]
        check(len(mine) == 1 and mine[0].get("kind") == "file", f"list /memories/smoke/: shows {NOTE} as a file", entries)
        if "content_sha256" in mine[0]:
            check(mine[0]["content_sha256"] == sha256(EDITED), "list: entry content_sha256 matches", mine[0])

        sc = await self.ok_call("memory_search", {"query": "BETA EDITED"})
        hits = sc.get("hits")
        check(isinstance(hits, list) and isinstance(sc.get("total_hits"), int), "search: has hits and total_hits", sc)
        check(any(h.get("path") == NOTE for h in hits), f"search 'BETA EDITED': finds {NOTE}", hits)

        sc = await self.ok_call("memory_delete", {"path": NOTE})
        check(NOTE in (sc.get("deleted_files") or []), f"delete: deleted_files lists {NOTE}", sc)
        check(
            not any(p.is_file() for p in self.root.rglob("python.md")),
            "delete: the plain file is gone from disk",
        )
        await self.error_call("memory_read", {"path": NOTE}, "read after delete is a tool error (isError: true)")

        print("\n== path confinement")
        await self.error_call(
            "memory_read",
            {"path": "/memories/../etc/passwd"},
            "read /memories/../etc/passwd is a tool error (isError: true)",
        )
        await self.error_call(
            "memory_write",
            {"path": "/memories/../escaped.md", "content": "must not be written\n"},
            "write /memories/../escaped.md is a tool error (isError: true)",
        )
        escaped = [p for p in self.root.parent.rglob("escaped.md")]
        check(not escaped, "write outside the store created no file", [str(p) for p in escaped])

        print("\n== Anthropic's memory tool (--tools all): exact strings")
        check("memory" in names, "the `memory` tool is listed beside the memory_* tools", sorted(names))
        path = "/memories/smoke/anthropic.md"
        await self.memory_says(
            {"command": "create", "path": path, "file_text": "one\ntwo\nthree"},
            f"File created successfully at: {path}",
        )
        await self.memory_says(
            {"command": "str_replace", "path": path, "old_str": "two", "new_str": "TWO"},
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
            "     1\tone\n     2\tTWO\n     3\tthree",
        )
        await self.memory_says(
            {"command": "view", "path": path, "view_range": [2, -1]},
            f"Here's the content of {path} with line numbers:\n     2\tTWO\n     3\tthree",
        )
        await self.memory_says(
            {"command": "view", "path": "/memories/smoke"},
            "Here're the files and directories up to 2 levels deep in /memories/smoke, "
            "excluding hidden items and node_modules:\n13B\t/memories/smoke\n13B\t/memories/smoke/anthropic.md",
        )
        await self.memory_says(
            {"command": "str_replace", "path": path, "old_str": "four", "new_str": "x"},
            f"No replacement was performed, old_str `four` did not appear verbatim in {path}.",
            error=True,
        )
        await self.memory_says(
            {"command": "view", "path": "/memories/../etc/passwd"},
            "Path /memories/../etc/passwd would escape /memories directory",
            error=True,
        )
        await self.memory_says({"command": "delete", "path": path}, f"Successfully deleted {path}")
        check(not any(self.root.rglob("anthropic.md")), "memory delete: the plain file is gone from disk")

    async def memory_says(self, args: dict[str, Any], want: str, error: bool = False) -> None:
        result = await self.call("memory", args)
        check(bool(result.is_error) == error, f"memory {args['command']}: isError is {error}", text_of(result))
        check(text_of(result) == want, f"memory {args['command']}: the text is exactly {want!r}", text_of(result))


async def main(binary: str) -> int:
    with tempfile.TemporaryDirectory(prefix="memdir-python-smoke.") as tmp:
        root = Path(tmp) / "store"
        root.mkdir()
        server_log = Path(tmp) / "server-stderr.log"
        params = StdioServerParameters(command=binary, args=["--root", str(root), "--tools", "all"], cwd=tmp)
        print(f"mcp SDK {mcp_version()}; server: {binary} --root {root} --tools all")
        smoke: Smoke | None = None
        failure: BaseException | None = None
        with open(server_log, "w", encoding="utf-8") as errlog:
            try:
                with anyio.fail_after(OVERALL_TIMEOUT_S):
                    async with stdio_client(params, errlog=errlog) as (read, write):
                        async with ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT_S) as session:
                            smoke = Smoke(session, root)
                            await smoke.run()
            except BaseException as e:  # noqa: BLE001 - report anything, including ExceptionGroups
                failure = e
        if failure is None:
            print(f"\npython SDK smoke: all checks passed ({smoke.calls if smoke else 0} tool calls)")
            return 0
        print(f"\nFAIL: {describe(failure)}", file=sys.stderr)
        if not isinstance(unwrap(failure), SmokeFailure):
            traceback.print_exception(failure, file=sys.stderr)
        log = server_log.read_text(encoding="utf-8", errors="replace").splitlines()
        print("---- server stderr (last 60 lines) ----", file=sys.stderr)
        print("\n".join(log[-60:]), file=sys.stderr)
        return 1


def unwrap(e: BaseException) -> BaseException:
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    return e


def describe(e: BaseException) -> str:
    e = unwrap(e)
    if isinstance(e, TimeoutError):
        return f"timed out (overall limit {OVERALL_TIMEOUT_S}s, per call {CALL_TIMEOUT_S}s)"
    return f"{type(e).__name__}: {e}" if not isinstance(e, SmokeFailure) else str(e)


def mcp_version() -> str:
    from importlib.metadata import version

    return version("mcp")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} path/to/memdir", file=sys.stderr)
        sys.exit(2)
    binary = os.path.realpath(sys.argv[1])
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(f"FAIL: memdir binary not found or not executable: {binary}", file=sys.stderr)
        sys.exit(1)
    sys.exit(anyio.run(main, binary))
