#!/usr/bin/env bash
# The HTTP rows of BENCH_RESULTS.md ("HTTP: axum on goro, on tokio, and Go's
# net/http"): goro-http (examples/axum_app.rs), axum on tokio
# (goro-bench/src/bin/axum_tokio.rs) and Go's net/http (bench/go-http),
# each serving `GET /` -> `Hello, World!` on 127.0.0.1, under load
# generators nobody here wrote:
#
#   h1      HTTP/1.1 in clear text   wrk -t2 -c100 --latency
#   h1tls   HTTPS/1.1                wrk -t2 -c100 --latency (no ALPN: HTTP/1.1)
#   h2tls   HTTP/2 over TLS (ALPN)   h2load -t2 -c10 -m10 (100 streams over 10 connections)
#
# at procs 1 and 2 (goro Ps, tokio worker_threads, GOMAXPROCS), runs
# interleaved (goro, tokio, go, goro, ...), a fresh server per run. Prints
# every run's req/s and p99, then the medians and the ratios.
#
#   scripts/http-bench.sh [--rounds N] [--duration S] [--procs "1 2"] [--rows "h1 h1tls h2tls"] [--out FILE]
#
# Defaults: 5 rounds, 5 s per run (after 1 s of warm-up for h2load; wrk
# has none, each run's first second included), every row and procs 1 2;
# the raw output (every tool's own text) goes to FILE, default
# bench/results/YYYY-MM-DD-http-raw.txt, and the summary to stdout.
# Installs wrk and h2load (nghttp2-client) with apt-get when missing (run as
# root). Needs cargo and go. Takes about rows x procs x 3 x rounds x
# (duration + 1.5) s: 8 minutes by default.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5 duration=5 procs_list="1 2" rows="h1 h1tls h2tls"
out="bench/results/$(date -u +%F)-http-raw.txt"
while (($#)); do
    case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --procs) procs_list=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "http-bench: unknown argument '$1'; see --help" >&2; exit 2 ;;
    esac
done
for r in $rows; do
    case $r in h1 | h1tls | h2tls) ;; *)
        echo "http-bench: --rows '$r': expected h1, h1tls or h2tls" >&2; exit 2 ;;
    esac
done

if ! command -v wrk >/dev/null || ! command -v h2load >/dev/null; then
    echo "http-bench: installing wrk and nghttp2-client (h2load)" >&2
    apt-get update -qq && apt-get install -y -qq wrk nghttp2-client >/dev/null
fi

echo "http-bench: building (release)" >&2
cargo build -q --release -p goro-http --example axum_app
cargo build -q --release -p goro-bench --features http --bin axum_tokio
(cd bench/go-http && go build -o ../../target/go-http .)
goro_bin=target/release/examples/axum_app
tokio_bin=target/release/axum_tokio
go_bin=target/go-http

work=$(mktemp -d)
server_pid=
cleanup() {
    if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# start IMPL ROW PROCS: starts a server, sets server_pid and url.
start() {
    local impl=$1 row=$2 p=$3 tls=1
    [[ $row == h1 ]] && tls=0
    : >"$work/server.out"
    case $impl in
    goro)
        if ((tls)); then "$goro_bin" --addr 127.0.0.1:0 --procs "$p" --db "$work/goro.db"
        else "$goro_bin" --addr 127.0.0.1:0 --procs "$p" --db "$work/goro.db" --plain; fi ;;
    tokio)
        if ((tls)); then "$tokio_bin" --threads "$p" --tls; else "$tokio_bin" --threads "$p"; fi ;;
    go)
        if ((tls)); then "$go_bin" -procs "$p" -tls; else "$go_bin" -procs "$p"; fi ;;
    esac >"$work/server.out" 2>"$work/server.err" &
    server_pid=$!
    local waited=0
    until grep -q '^listening on ' "$work/server.out"; do
        sleep 0.05
        waited=$((waited + 1))
        if ((waited > 200)) || ! kill -0 "$server_pid" 2>/dev/null; then
            echo "http-bench: $impl ($row, procs $p) did not start:" >&2
            cat "$work/server.err" >&2
            exit 1
        fi
    done
    url=$(sed -n 's/^listening on //p' "$work/server.out" | head -1)/
}

stop() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
}

# p99 of wrk's "99%  1.23ms" line, in ms.
wrk_p99() {
    awk '$1 == "99%" {
        v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
        if (u == "us") v /= 1000; else if (u == "s") v *= 1000; else if (u == "m") v *= 60000
        printf "%.3f", v }' "$1"
}
wrk_rps() { awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$1"; }
# h2load: req/s from its summary; p99 from its per-request log (column 3, us).
h2_rps() { awk '/^finished in/ { for (i = 1; i <= NF; i++) if ($i == "req/s,") { v = $(i - 1); gsub(/[^0-9.]/, "", v); printf "%.0f", v } }' "$1"; }
h2_p99() {
    awk -F'\t' '$2 == 200 { print $3 }' "$1" | sort -n |
        awk '{ a[NR] = $1 } END { if (NR) printf "%.3f", a[int(NR * 0.99)] / 1000; else print "nan" }'
}

mkdir -p "$(dirname "$out")"
{
    echo "# scripts/http-bench.sh --rounds $rounds --duration $duration --procs '$procs_list' --rows '$rows'"
    echo "# $(date -u +%FT%TZ) at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- goro goro-http examples goro-bench bench || echo '+dirty'); $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# $(wrk --version 2>&1 | head -1); $(h2load --version 2>&1 | head -1); $(go version)"
} >"$out"
results="$work/results.tsv"
: >"$results"

for p in $procs_list; do
    for row in $rows; do
        for ((k = 1; k <= rounds; k++)); do
            for impl in goro tokio go; do
                start "$impl" "$row" "$p"
                log="$work/load.txt"
                case $row in
                h1 | h1tls)
                    cmd="wrk -t2 -c100 -d${duration}s --latency $url"
                    $cmd >"$log" 2>&1 || true
                    rps=$(wrk_rps "$log") p99=$(wrk_p99 "$log") ;;
                h2tls)
                    cmd="h2load -t2 -c10 -m10 --warm-up-time=1 -D $duration --log-file=$work/h2.log $url"
                    $cmd >"$log" 2>&1 || true
                    rps=$(h2_rps "$log") p99=$(h2_p99 "$work/h2.log") ;;
                esac
                stop
                {
                    echo
                    echo "## procs=$p row=$row impl=$impl round=$k: $cmd"
                    cat "$log"
                    [[ $row == h2tls ]] && echo "p99 from --log-file: ${p99} ms"
                } >>"$out"
                printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$p" "$row" "$impl" "$k" "${rps:-0}" "${p99:-nan}" >>"$results"
                printf 'procs=%s %-6s %-5s round %s: %8s req/s  p99 %8s ms\n' "$p" "$row" "$impl" "$k" "${rps:-0}" "${p99:-nan}" >&2
            done
        done
    done
done

# Medians per procs x row x impl, then ratios.
summary=$(awk -F'\t' '
    function median(s,   n, a, i, j, t) {
        n = split(s, a, " ")
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { k = $1 SUBSEP $2; rps[k, $3] = rps[k, $3] " " $5; p99[k, $3] = p99[k, $3] " " $6; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
    END {
        printf "%-5s %-6s | %9s %9s %9s | %8s %8s %8s | %10s %10s | %11s %11s\n", "procs", "row", "goro r/s", "tokio r/s", "go r/s", "goro p99", "tokio p99", "go p99", "r/s g/tok", "r/s g/go", "p99 g/tok", "p99 g/go"
        for (i = 1; i <= n; i++) {
            k = order[i]; split(k, pr, SUBSEP)
            gr = median(rps[k, "goro"]); tr = median(rps[k, "tokio"]); Gr = median(rps[k, "go"])
            gp = median(p99[k, "goro"]); tp = median(p99[k, "tokio"]); Gp = median(p99[k, "go"])
            printf "%-5s %-6s | %9.0f %9.0f %9.0f | %8.2f %8.2f %8.2f | %10.2f %10.2f | %11.2f %11.2f\n", pr[1], pr[2], gr, tr, Gr, gp, tp, Gp, (tr ? gr / tr : 0), (Gr ? gr / Gr : 0), (tp ? gp / tp : 0), (Gp ? gp / Gp : 0)
        }
    }' "$results")
{
    echo
    echo "# every run: procs row impl round req/s p99_ms"
    cat "$results"
    echo
    echo "# medians over $rounds rounds (p99 in ms; r/s g/tok = goro's req/s / tokio's, above 1 goro faster; p99 g/tok below 1 goro lower)"
    echo "$summary"
} >>"$out"
echo "$summary"
echo "http-bench: raw output in $out" >&2
