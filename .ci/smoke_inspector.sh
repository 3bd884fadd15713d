#!/usr/bin/env bash
# Smoke-test a memdir binary through the official MCP Inspector CLI.
#
# Usage: .ci/smoke_inspector.sh path/to/memdir
#
# The Inspector is expected at target/ci-tools/node/node_modules/.bin/mcp-inspector
# (installed by .ci/run), or wherever $MCP_INSPECTOR points.
#
# Every Inspector call starts a fresh `memdir --root STORE` over stdio, so the
# round trip below also checks that state lives on disk, not in the process.
#
# Inspector CLI syntax used (v2.x):
#   mcp-inspector --cli --format json --method tools/list --strict -- CMD ARGS...
#   mcp-inspector --cli --format json --method tools/call --tool-name NAME \
#       --tool-arg key=value ...        -- CMD ARGS...
#   mcp-inspector --cli --format json --method tools/call --tool-name NAME \
#       --tool-args-json '{"k":"v"}'    -- CMD ARGS...
# --format json prints one {"result": ...} object on stdout. Exit codes: 0 ok,
# 1 usage/protocol error, 4 unreachable, 5 tool returned isError:true,
# 6 (--strict) tool schema portability error.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 path/to/memdir" >&2
    exit 2
fi

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$(realpath "$1")"
inspector="${MCP_INSPECTOR:-$repo_root/target/ci-tools/node/node_modules/.bin/mcp-inspector}"
call_timeout="${SMOKE_CALL_TIMEOUT:-60}"

[[ -x "$bin" ]] || { echo "FAIL: memdir binary not found or not executable: $bin" >&2; exit 1; }
[[ -x "$inspector" ]] || { echo "FAIL: MCP Inspector not found: $inspector (run .ci/run)" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/memdir-inspector-smoke.XXXXXX")"
trap 'rm -rf "$work"' EXIT
store="$work/store"
mkdir -p "$store"
# Keep the Inspector's own files (catalog, client config) out of $HOME.
export MCP_CATALOG_PATH="$work/inspector/mcp.json"
export MCP_CLIENT_CONFIG_PATH="$work/inspector/client.json"
mkdir -p "$work/inspector"

out="$work/out.json"
err="$work/err.txt"
step_no=0

echo "inspector: $("$inspector" --version 2>/dev/null || echo '?')  ($inspector)"
echo "server:    $bin --root $store"

fail() {
    echo "FAIL: $*" >&2
    echo "---- last inspector stdout ----" >&2
    cat "$out" >&2 2>/dev/null || true
    echo >&2
    echo "---- last inspector stderr (includes the server's stderr) ----" >&2
    tail -n 60 "$err" >&2 2>/dev/null || true
    exit 1
}

# inspect ARGS... : run one Inspector CLI call against a fresh server process.
# Sets $rc; stdout in $out, stderr in $err. Never aborts by itself.
inspect() {
    step_no=$((step_no + 1))
    echo
    echo "-- [$step_no] mcp-inspector --cli --format json $*"
    rc=0
    timeout "$call_timeout" "$inspector" --cli --format json "$@" -- "$bin" --root "$store" \
        >"$out" 2>"$err" || rc=$?
    if [[ $rc -eq 124 ]]; then
        fail "inspector call timed out after ${call_timeout}s"
    fi
}

# expect_rc N : the last call must have exited N.
expect_rc() {
    [[ $rc -eq $1 ]] || fail "expected inspector exit code $1, got $rc"
}

# check 'PYTHON EXPR' 'description' : evaluate EXPR with r = the result object
# of the last call ({"result": r} on stdout); fail unless it is truthy.
check() {
    local expr="$1" what="$2" verdict
    verdict="$(python3 - "$out" "$expr" <<'PY'
import hashlib, json, os, sys
path, expr = sys.argv[1], sys.argv[2]
try:
    with open(path, encoding="utf-8") as f:
        r = json.load(f)["result"]
except Exception as e:  # noqa: BLE001
    print(f"cannot parse inspector output: {e!r}")
    sys.exit(0)
sc = r.get("structuredContent") or {}
text = "".join(c.get("text", "") for c in r.get("content", []) if c.get("type") == "text")
env = os.environ
note, content, edited = env["SMOKE_NOTE"], env["SMOKE_CONTENT"], env["SMOKE_EDITED"]
sha = lambda s: hashlib.sha256(s.encode("utf-8")).hexdigest()
try:
    ok = eval(expr)
except Exception as e:  # noqa: BLE001
    print(f"check raised {e!r}")
    sys.exit(0)
print("ok" if ok else "false")
PY
)"
    [[ "$verdict" == ok ]] || fail "$what  [check: $expr -> $verdict]"
    echo "   ok: $what"
}

# json_obj KEY VALUE ... : print a JSON object built from string pairs.
json_obj() {
    python3 -c 'import json, sys; a = sys.argv[1:]; print(json.dumps(dict(zip(a[::2], a[1::2]))))' "$@"
}

note='/memories/smoke/inspector.md'
content=$'# Inspector smoke\nalpha line\nbeta line: café ü\ngamma line\n'
edited=$'# Inspector smoke\nalpha line\nBETA EDITED by inspector\ngamma line\n'
export SMOKE_CONTENT="$content" SMOKE_EDITED="$edited" SMOKE_NOTE="$note"

echo
echo "== tools/list (with --strict schema lint)"
inspect --method tools/list --strict
if [[ $rc -eq 6 ]]; then
    fail "--strict found error-severity tool schema portability problems (see stderr above)"
fi
expect_rc 0
check 'sorted({t["name"] for t in r["tools"]} & {"memory_list","memory_read","memory_write","memory_edit","memory_delete","memory_search"}) == ["memory_delete","memory_edit","memory_list","memory_read","memory_search","memory_write"]' \
    "all six tools listed (memory_list/read/write/edit/delete/search)"
check 'all(t.get("inputSchema", {}).get("type") == "object" for t in r["tools"])' \
    "every tool has an object inputSchema"
if grep -q . "$err"; then
    echo "   note: inspector stderr for tools/list:"
    sed 's/^/     | /' "$err"
fi

echo
echo "== write -> read -> edit -> read -> delete -> read round trip"
inspect --method tools/call --tool-name memory_write \
    --tool-args-json "$(json_obj path "$note" content "$content")"
expect_rc 0
check 'r.get("isError") is not True' "memory_write returned a non-error result"
check 'sc.get("path") == note' "write: structuredContent.path == $note"
check 'sc.get("created") is True' "write: structuredContent.created is true"
check 'sc.get("content_sha256") == sha(content)' "write: content_sha256 is the SHA-256 of the UTF-8 content"
check 'sc.get("size_bytes") == len(content.encode("utf-8"))' "write: size_bytes is the UTF-8 byte length"

inspect --method tools/call --tool-name memory_read --tool-arg "path=$note"
expect_rc 0
check 'r.get("isError") is not True' "memory_read returned a non-error result"
check 'sc.get("content") == content' "read: structuredContent.content is exactly what was written"
check 'sc.get("content_sha256") == sha(content)' "read: content_sha256 matches"
check 'sc.get("total_lines") == 4 and sc.get("start_line") == 1 and sc.get("end_line") == 4' \
    "read: total_lines=4, start_line=1, end_line=4"
check '"     3\tbeta line: café ü" in text' "read: text content shows line 3 as 6-column number, TAB, line"

inspect --method tools/call --tool-name memory_edit \
    --tool-args-json "$(json_obj path "$note" old_str 'beta line: café ü' new_str 'BETA EDITED by inspector')"
expect_rc 0
check 'r.get("isError") is not True' "memory_edit (old_str -> new_str) returned a non-error result"
check 'sc.get("path") == note' "edit: structuredContent.path == $note"
check 'sc.get("content_sha256") == sha(edited)' "edit: content_sha256 is the SHA-256 of the edited file"

inspect --method tools/call --tool-name memory_read --tool-arg "path=$note"
expect_rc 0
check 'sc.get("content") == edited' "read after edit: content has the new text and not the old"
check '"BETA EDITED by inspector" in text and "beta line" not in text' "read after edit: text content shows the new line only"

echo
echo "== resources and prompts"
inspect --method resources/list
expect_rc 0
check 'any(x["uri"] == "memory://memories/smoke/inspector.md" and x.get("mimeType") == "text/markdown" for x in r["resources"])' \
    "resources/list: the memory is memory://memories/smoke/inspector.md (text/markdown)"
inspect --method resources/read --uri "memory://memories/smoke/inspector.md"
expect_rc 0
check 'r["contents"][0]["text"] == edited' "resources/read: the memory's whole text"
inspect --method prompts/list
expect_rc 0
check '[p["name"] for p in r["prompts"]] == ["memory_protocol"]' "prompts/list: memory_protocol"

inspect --method tools/call --tool-name memory_delete --tool-arg "path=$note"
expect_rc 0
check 'r.get("isError") is not True' "memory_delete returned a non-error result"
check 'note in (sc.get("deleted_files") or [])' "delete: deleted_files lists $note"

inspect --method tools/call --tool-name memory_read --tool-arg "path=$note"
[[ $rc -eq 5 ]] || fail "read of a deleted memory: expected the inspector's tool-error exit code 5 (isError:true), got $rc"
check 'r.get("isError") is True' "read after delete is a tool error result (isError: true, inspector exit 5)"
check 'text.strip() != ""' "read after delete: the error result explains itself in its text content"

echo
echo "inspector smoke: all checks passed ($step_no inspector calls)"
