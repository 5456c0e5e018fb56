#!/usr/bin/env bash
# The HTTP example's first acceptance check, by hand: the example
# (examples/axum_app.rs) answers `curl --http2` and `curl --http1.1` over
# TLS, and h2load with 100 concurrent streams over 10 connections, on
# 127.0.0.1; also its SQLite and reqwest routes and a graceful shutdown.
# Prints each command and its output (to FILE with --out).
#
#   scripts/http-example-check.sh [--out FILE]
#
# Installs curl and h2load (nghttp2-client) with apt-get when missing (run
# as root). Exits non-zero when an answer is not the expected one.
set -euo pipefail
cd "$(dirname "$0")/.."
out=/dev/stdout
if [[ "${1:-}" == --out ]]; then out=$2; fi
if ! command -v h2load >/dev/null || ! command -v curl >/dev/null; then
    apt-get update -qq && apt-get install -y -qq curl nghttp2-client >/dev/null
fi
cargo build -q --release -p goro-http --example axum_app
work=$(mktemp -d)
target/release/examples/axum_app --addr 127.0.0.1:0 --procs 2 --db "$work/notes.db" >"$work/out" 2>"$work/err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 200); do grep -q '^listening on ' "$work/out" && break; sleep 0.05; done
url=$(sed -n 's/^listening on //p' "$work/out")
fail=0
run() {
    echo "\$ $*"
    "$@" 2>&1 || { echo "(exit status $?)"; fail=1; }
    echo
}
expect() { # expect PATTERN COMMAND...: runs it, fails unless its output matches
    local pat=$1 got
    shift
    echo "\$ $*"
    got=$("$@" 2>&1) || true
    echo "$got"
    echo
    grep -qE "$pat" <<<"$got" || { echo "!! expected /$pat/"; fail=1; }
}
{
    echo "# scripts/http-example-check.sh at $(git rev-parse --short HEAD), $(date -u +%FT%TZ)"
    echo "# target/release/examples/axum_app --addr 127.0.0.1:0 --procs 2 --db \$TMP/notes.db"
    sed 's/^/# server: /' "$work/out" "$work/err"
    echo
    expect 'HTTP/2 200' curl -sk --http2 -i "$url/"
    expect 'HTTP/1.1 200' curl -sk --http1.1 -i "$url/json"
    expect '"version":"?2' curl -sk --http2 -o /dev/null -w '{"version":"%{http_version}","status":%{http_code}}\n' "$url/"
    expect '201' curl -sk --http2 -i -H 'content-type: application/json' -d '{"text":"hello from curl"}' "$url/notes"
    expect 'hello from curl' curl -sk --http1.1 "$url/notes/1"
    expect '404' curl -sk --http2 -i "$url/notes/999"
    expect '"status":200' curl -sk --http2 "$url/upstream"
    expect '100000 succeeded, 0 failed' h2load -c10 -m10 -n100000 "$url/"
    expect '2000 succeeded, 0 failed' h2load -c10 -m10 -n2000 "$url/notes/1"
    expect '1000 succeeded, 0 failed' h2load -c10 -m10 -n1000 "$url/upstream"
    echo "\$ kill -INT $pid   # graceful shutdown"
    kill -INT "$pid"
    wait "$pid" && echo "exit status 0" || { echo "exit status $?"; fail=1; }
    sed 's/^/# server: /' "$work/err"
} >"$out"
exit $fail
