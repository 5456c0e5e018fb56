#!/usr/bin/env bash
# The counts the README gives, as raw files: the test count and wall time of
# `cargo test --workspace` on a warm build, and goro-bench's workloads and
# rows (`goro-bench list`). scripts/check-results.sh checks the README's
# numbers against these files.
#
#   scripts/test-count.sh          # bench/results/DATE-test-count.txt and DATE-goro-bench-list.txt
#
# The test binaries are built first (`--no-run`), so the time is the tests'
# own; the load averages at the start and the end are recorded beside it,
# since on the shared 2-core VM another build doubles the time.
set -euo pipefail
cd "$(dirname "$0")/.."

date=$(date -u +%F)
tests=bench/results/$date-test-count.txt
rows=bench/results/$date-goro-bench-list.txt
commit=$(git rev-parse --short HEAD)
dirty=$(git status --short --untracked-files=no | wc -l)
tree="commit $commit$( ((dirty > 0)) && echo " plus uncommitted changes in $dirty tracked files")"
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown; }

echo "=== building the test binaries"
cargo test --workspace --no-run -q
out=$(mktemp)
trap 'rm -f "$out"' EXIT
load_start=$(load)
t0=$(date +%s.%N)
rc=0
cargo test --workspace >"$out" 2>&1 || rc=$?
t1=$(date +%s.%N)
{
    echo "\$ cargo test --workspace   (scripts/test-count.sh: the test binaries built beforehand with --no-run)"
    echo "$tree, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "machine: $(nproc) CPUs, $(rustc --version)"
    echo "load average at start (1, 5, 15 min): $load_start"
    echo
    cat "$out"
    echo
    echo "=== summary"
    echo "exit status: $rc"
    echo "load average at end (1, 5, 15 min): $(load)"
    echo "test binaries and doc-test runs (\"test result:\" lines): $(grep -c '^test result:' "$out")"
    grep -oE '^test result: [a-z]+\. [0-9]+ passed; [0-9]+ failed; [0-9]+ ignored' "$out" |
        awk '{p += $4; f += $6; i += $8}
             END {printf "tests passed: %d, failed: %d, ignored: %d; tests run (passed + failed): %d\n", p, f, i, p + f}'
    awk -v a="$t0" -v b="$t1" 'BEGIN {s = b - a; printf "wall time: %.0f s (%d min %d s)\n", s, int(s / 60), int(s) % 60}'
} >"$tests"
tail -n 3 "$tests"
echo "wrote $tests"

{
    echo "\$ goro-bench list   ($tree, $(date -u +%F), $(nproc) CPUs: compare --full runs at procs $( (($(nproc) >= 4)) && echo 1,2,4 || echo 1,2) here)"
    cargo run -q -p goro-bench -- list 2>&1
} >"$rows"
tail -n 1 "$rows"
echo "wrote $rows"
exit "$rc"
