#!/usr/bin/env bash
# goro vs Go vs tokio at procs 1..16, on a many-core machine that has
# neither Rust nor Go (scripts/README.md, "scale.sh").
#
#   scripts/scale.sh build    # here: goro-bench (release, stripped), the Go
#                             # twin (go build in bench/go) and this script
#                             # into target/scale/
#   scripts/scale.sh run      # there, from the repository root: runs the
#                             # prebuilt binaries only (no cargo, no go)
#
# `run` measures the rows of SCALE_ROWS at each procs of SCALE_PROCS with
# `goro-bench run ROWS --procs P` (goro, tokio and the Go twin interleaved
# in each row, the Go twin named by GORO_BENCH_GO_BIN), one invocation per
# procs so that a cut-off run keeps the procs already done, and writes the
# raw files into $OUT when it is set (the device tool sets it), else into
# bench/results/YYYY-MM-DD-scale/:
#
#   host.txt              the machine (nproc, lscpu, uname, memory, load)
#   build.txt             what was built, where, from which commit (from build)
#   scale-pP.txt / .json  goro-bench's table and JSON at procs P
#   summary.txt           every procs' table, one after the other
#
# Environment (all optional):
#   SCALE_DIR      where the binaries are   [the folder of this script when
#                  it holds them (target/scale/scale.sh), else target/scale]
#   SCALE_ROWS     comma-separated workloads [fan_in/main,fan_in/spawned,
#                  chan_contended,chan_prodcons/cap=10,select_contended,
#                  spawn_many,mutex_contended]
#   SCALE_PROCS    procs, space- or comma-separated [1 2 4 8 16]
#   SCALE_RUNS     measured runs per implementation [5; 3 with SCALE_QUICK]
#   SCALE_QUICK    1: the quick op counts (10x fewer ops) [0]
#   SCALE_TIMEOUT  seconds one run may take before it is abandoned [60]
#   SCALE_IMPLS    implementations [goro,tokio,go]
#   SCALE_POLICIES goro policies to try beside the default, separated by
#                  `;` (GORO_POLICY syntax, e.g. "snoozers=all;
#                  spin=bounded:0:0", every M looking again and none, the
#                  open question of 2026-11-29): after each procs' main run,
#                  goro alone runs the rows once per policy, into
#                  scale-pP-policyN.txt/.json (the policy is the file's
#                  first line), so one many-core run compares candidate
#                  policies with the default on the same warm machine [none]
#   SCALE_BINS     other goro-bench builds in SCALE_DIR, space-separated
#                  file names (e.g. goro-bench-base): after each procs'
#                  main run each runs the rows goro alone, into
#                  scale-pP-NAME.txt/.json, to compare a change with the
#                  code before it on the same warm machine [none]
#   OUT            the output folder (see above); with OUT set the raw
#                  files come packed in OUT/scale-raw.tar.gz, beside
#                  summary.txt and host.txt
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ -f $here/goro-bench && -f $here/goro-bench-go ]]; then
    default_dir=$here # the copy inside the prebuilt folder
else
    default_dir=$(pwd)/target/scale
fi
dir=${SCALE_DIR:-$default_dir}

usage() { sed -n '2,49p' "${BASH_SOURCE[0]}"; }

build() {
    local root
    root=$(cd "$here/.." && pwd)
    [[ -f $root/goro-bench/Cargo.toml && -d $root/bench/go ]] || {
        echo "scale.sh build: run scripts/scale.sh from the goro repository (no goro-bench/ or bench/go/ under $root)" >&2
        exit 2
    }
    command -v cargo >/dev/null || { echo "scale.sh build: cargo not on PATH" >&2; exit 2; }
    command -v go >/dev/null || { echo "scale.sh build: go not on PATH" >&2; exit 2; }
    local target=${CARGO_TARGET_DIR:-$root/target}
    echo "scale.sh: cargo build --release -p goro-bench (target dir $target)" >&2
    (cd "$root" && cargo build --release -p goro-bench)
    mkdir -p "$dir"
    cp "$target/release/goro-bench" "$dir/goro-bench.tmp"
    if command -v strip >/dev/null; then strip "$dir/goro-bench.tmp"; fi
    mv "$dir/goro-bench.tmp" "$dir/goro-bench"
    echo "scale.sh: go build in bench/go (static: CGO_ENABLED=0)" >&2
    (cd "$root/bench/go" && CGO_ENABLED=0 go build -trimpath -o "$dir/goro-bench-go" .)
    cp "${BASH_SOURCE[0]}" "$dir/scale.sh.tmp" && mv "$dir/scale.sh.tmp" "$dir/scale.sh"
    chmod +x "$dir/scale.sh" "$dir/goro-bench" "$dir/goro-bench-go"
    local rev dirty=""
    rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
    if [[ -n $(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
        dirty=" (with uncommitted changes)"
    fi
    {
        echo "built: $(date -u +%FT%TZ) on $(uname -n), $(nproc) cores"
        echo "commit: $rev$dirty"
        echo "rustc: $(rustc -V 2>/dev/null || echo '?')"
        echo "go: $(go version)"
        echo "glibc here: $(ldd --version 2>/dev/null | head -1 || echo '?')"
        echo "goro-bench needs: $( (objdump -T "$dir/goro-bench" 2>/dev/null || true) | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
        echo "goro-bench: $(du -h "$dir/goro-bench" | cut -f1), goro-bench-go: $(du -h "$dir/goro-bench-go" | cut -f1)"
    } >"$dir/build.txt"
    cat "$dir/build.txt" >&2
    local rel=${dir#"$root"/}
    echo "scale.sh: ready. On the many-core machine, from the repository root: $rel/scale.sh run" >&2
    echo "          (device tool: carry [\"$rel\"], command \"$rel/scale.sh run\")" >&2
}

host_info() {
    echo "date: $(date -u +%FT%TZ)"
    echo "uname: $(uname -a)"
    echo "nproc: $(nproc)"
    echo "loadavg: $(cat /proc/loadavg 2>/dev/null || echo '?')"
    if command -v lscpu >/dev/null; then
        lscpu
    else
        grep -m1 'model name' /proc/cpuinfo || true
    fi
    if command -v free >/dev/null; then free -m; fi
}

# goro alone at procs P with BIN, into scale-pP-NAME.txt/.json whose first
# line is LABEL: goro_only P NAME LABEL BIN (uses run's rows, runs, quick
# and out). Returns 1 when goro-bench failed.
goro_only() {
    local p=$1 name=$2 label=$3 bin=$4 rc
    echo "scale.sh: procs $p, goro with $label" >&2
    echo "$label" >"$out/scale-p$p-$name.txt"
    set +e
    "$bin" run "$rows" --procs "$p" --runs "$runs" ${quick[@]+"${quick[@]}"} \
        --impl goro --timeout "${SCALE_TIMEOUT:-60}" \
        --json "$out/scale-p$p-$name.json" 2>&1 | tee -a "$out/scale-p$p-$name.txt"
    rc=${PIPESTATUS[0]}
    set -e
    if ((rc != 0)); then
        echo "scale.sh: procs $p, $label: goro-bench exited $rc" >&2
        return 1
    fi
}

run() {
    for b in goro-bench goro-bench-go; do
        [[ -x $dir/$b ]] || {
            echo "scale.sh run: $dir/$b is missing; run 'scripts/scale.sh build' on a machine with cargo and go first (or set SCALE_DIR)" >&2
            exit 2
        }
    done
    local rows=${SCALE_ROWS:-fan_in/main,fan_in/spawned,chan_contended,chan_prodcons/cap=10,select_contended,spawn_many,mutex_contended}
    local procs=${SCALE_PROCS:-1 2 4 8 16}
    procs=${procs//,/ }
    local quick=() runs=${SCALE_RUNS:-5}
    if [[ ${SCALE_QUICK:-0} == 1 ]]; then
        quick=(--quick)
        runs=${SCALE_RUNS:-3}
    fi
    # With OUT set (the device tool, which brings back at most 8 files)
    # the raw files are written to a scratch folder and packed into
    # $OUT/scale-raw.tar.gz beside summary.txt and host.txt, also when the
    # run is cut off.
    local out
    if [[ -n ${OUT:-} ]]; then
        out=$(mktemp -d)
        mkdir -p "$OUT"
        trap 'pack "'"$out"'"' EXIT
    else
        out=bench/results/$(date -u +%F)-scale
    fi
    mkdir -p "$out"
    host_info >"$out/host.txt" 2>&1
    if [[ -f $dir/build.txt ]]; then cp "$dir/build.txt" "$out/build.txt"; fi
    {
        echo "scale.sh run: rows $rows"
        echo "procs: $procs; runs: $runs; quick: ${SCALE_QUICK:-0}; impls: ${SCALE_IMPLS:-goro,tokio,go}; binaries: $dir"
    } | tee -a "$out/host.txt" >&2
    # The prebuilt twin; goro-bench then neither looks for nor runs `go`.
    export GORO_BENCH_GO_BIN=$dir/goro-bench-go
    local failed=0 p rc
    for p in $procs; do
        echo "scale.sh: procs $p" >&2
        set +e
        "$dir/goro-bench" run "$rows" --procs "$p" --runs "$runs" ${quick[@]+"${quick[@]}"} \
            --impl "${SCALE_IMPLS:-goro,tokio,go}" --timeout "${SCALE_TIMEOUT:-60}" \
            --json "$out/scale-p$p.json" 2>&1 | tee "$out/scale-p$p.txt"
        rc=${PIPESTATUS[0]}
        set -e
        if ((rc != 0)); then
            echo "scale.sh: procs $p: goro-bench exited $rc (see $out/scale-p$p.txt)" >&2
            failed=1
        fi
        local alt
        for alt in ${SCALE_BINS:-}; do
            goro_only "$p" "$alt" "binary: $alt" "$dir/$alt" || failed=1
        done
        local n=0 pol
        local -a pols=()
        IFS=';' read -r -a pols <<<"${SCALE_POLICIES:-}"
        for pol in ${pols[@]+"${pols[@]}"}; do
            n=$((n + 1))
            GORO_POLICY=$pol goro_only "$p" "policy$n" "GORO_POLICY=$pol" "$dir/goro-bench" || failed=1
        done
    done
    # The tables alone, procs after procs: from each header to the blank
    # line before the legend.
    local f
    for p in $procs; do
        for f in "$out/scale-p$p.txt" "$out/scale-p$p"-*.txt; do
            [[ -f $f ]] || continue
            echo "== ${f##*/}: $(head -1 "$f")"
            awk '/^workload /{on=1} on&&/^$/{exit} on' "$f"
            echo
        done
    done >"$out/summary.txt"
    echo "scale.sh: raw files in $out" >&2
    return "$failed"
}

# The device tool's OUT: one archive of the raw files, and the two files
# read first.
pack() {
    local from=$1
    tar czf "$OUT/scale-raw.tar.gz" -C "$from" .
    cp "$from/host.txt" "$OUT/" 2>/dev/null || true
    cp "$from/summary.txt" "$OUT/" 2>/dev/null || true
    echo "scale.sh: raw files packed into $OUT/scale-raw.tar.gz" >&2
}

case "${1:-}" in
build) build ;;
run) run ;;
-h | --help | help) usage ;;
*)
    usage >&2
    exit 2
    ;;
esac
