#!/usr/bin/env bash
# TLS through the example reverse proxy: docs/deploy/nginx.conf in front of
# `memdir serve --http`, with a self-signed certificate, checked with curl over HTTPS.
#
#   bash .ci/smoke_tls_proxy.sh path/to/memdir
#
# Installs Debian's nginx-light when nginx is missing (needs root, as in CI). Only
# loopback addresses are used. Exit 0 when every check passed.
set -euo pipefail

BIN="$(realpath "$1")"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CONF_EXAMPLE="$PWD/docs/deploy/nginx.conf"

if ! command -v nginx >/dev/null; then
    echo "installing nginx-light (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q nginx-light >/dev/null
fi

T="$(mktemp -d)"
MEMDIR_PID=""
NGINX_PID=""
cleanup() {
    [[ -n "$NGINX_PID" ]] && kill "$NGINX_PID" 2>/dev/null || true
    [[ -n "$MEMDIR_PID" ]] && kill "$MEMDIR_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    echo "--- memdir stderr" >&2; cat "$T/memdir.err" >&2 || true
    echo "--- nginx error log" >&2; cat "$T/nginx-error.log" >&2 || true
    exit 1
}
ok() { echo "   ok: $*"; }

NAME="memory.example.com"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$NAME" \
    -addext "subjectAltName=DNS:$NAME" -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
TOKEN="proxy-$(openssl rand -hex 24)"
printf 'proxy-smoke %s\n' "$TOKEN" >"$T/tokens"
chmod 600 "$T/tokens"

# memdir on a free loopback port, answering to the proxy's public name.
RUST_LOG=memdir=info XDG_CACHE_HOME="$T/cache" "$BIN" --root "$T/store" serve \
    --http 127.0.0.1:0 --tokens "$T/tokens" --allow-host "$NAME" 2>"$T/memdir.err" </dev/null &
MEMDIR_PID=$!
for _ in $(seq 200); do
    grep -q "listening on" "$T/memdir.err" && break
    kill -0 "$MEMDIR_PID" 2>/dev/null || fail "memdir exited"
    sleep 0.05
done
UPSTREAM="$(grep -o 'listening on http://[^/]*' "$T/memdir.err" | head -1 | sed 's#.*http://##')"
[[ -n "$UPSTREAM" ]] || fail "memdir never printed its address"

# nginx with the example server block: only the listen address, certificate paths and
# upstream port differ from docs/deploy/nginx.conf.
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
sed -e "s#listen 443 ssl;#listen 127.0.0.1:$PORT ssl;#" \
    -e "s#/etc/letsencrypt/live/$NAME/fullchain.pem#$T/cert.pem#" \
    -e "s#/etc/letsencrypt/live/$NAME/privkey.pem#$T/key.pem#" \
    -e "s#http://127.0.0.1:8080#http://$UPSTREAM#" \
    "$CONF_EXAMPLE" >"$T/server.conf"
cmp -s "$CONF_EXAMPLE" "$T/server.conf" && fail "the example config did not take the test's paths"
cat >"$T/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $T/nginx.pid;
error_log $T/nginx-error.log warn;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $T/body;
    proxy_temp_path $T/proxy;
    include $T/server.conf;
}
EOF
nginx -t -q -c "$T/nginx.conf" -p "$T" || fail "nginx rejects the example config"
nginx -c "$T/nginx.conf" -p "$T" -g 'daemon off;' &
NGINX_PID=$!
URL="https://$NAME:$PORT"
CURL=(curl -sS --max-time 20 --cacert "$T/cert.pem" --resolve "$NAME:$PORT:127.0.0.1")
for _ in $(seq 200); do
    "${CURL[@]}" -o /dev/null "$URL/healthz" 2>/dev/null && break
    kill -0 "$NGINX_PID" 2>/dev/null || fail "nginx exited"
    sleep 0.05
done

rpc() { # rpc BODY [extra curl args...]
    local body="$1"; shift
    "${CURL[@]}" -X POST "$URL/mcp" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' "$@" -d "$body" -w '\n%{http_code}'
}

out="$("${CURL[@]}" "$URL/healthz")"
[[ "$out" == '{"status":"ok"}' ]] || fail "healthz over TLS: $out"
ok "GET /healthz over HTTPS through nginx"

write='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_write","arguments":{"path":"/memories/tls.md","content":"behind the proxy\n"}}}'
out="$(rpc "$write")"
[[ "$(tail -n1 <<<"$out")" == 401 ]] || fail "no token should be 401: $out"
[[ ! -e "$T/store/tls.md" ]] || fail "a refused request wrote"
ok "no token: 401, nothing written"

out="$(rpc "$write" -H "Origin: https://evil.example" -H "Authorization: Bearer $TOKEN")"
[[ "$(tail -n1 <<<"$out")" == 403 ]] || fail "a foreign Origin should be 403: $out"
ok "a foreign Origin passes the proxy and gets 403"

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
out="$(rpc "$init" -H "Authorization: Bearer $TOKEN")"
[[ "$(tail -n1 <<<"$out")" == 200 && "$out" == *'"name":"memdir"'* ]] || fail "initialize: $out"
ok "initialize over HTTPS"

out="$(rpc "$write" -H "Authorization: Bearer $TOKEN")"
[[ "$(tail -n1 <<<"$out")" == 200 && "$out" == *'"created":true'* ]] || fail "write: $out"
[[ "$(cat "$T/store/tls.md")" == "behind the proxy" ]] || fail "the file on disk"
read_call='{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_history","arguments":{"path":"/memories/tls.md"}}}'
out="$(rpc "$read_call" -H "Authorization: Bearer $TOKEN")"
[[ "$out" == *'"actor":"proxy-smoke"'* ]] || fail "history actor: $out"
ok "memory_write and memory_history over HTTPS, actor from the token"

! grep -q "$TOKEN" "$T/memdir.err" "$T/nginx-error.log" || fail "the token was logged"
ok "the token is in no log"
echo "TLS proxy smoke: all checks passed"
