#!/usr/bin/env bash
# Instructions per run of goro-bench rows, counted by callgrind, for two
# builds (or two policies) of goro side by side.
#
#   scripts/instructions.sh OLD_BIN NEW_BIN [ROWS...]
#
# OLD_BIN and NEW_BIN are goro-bench binaries (for example one built at an
# older commit in a `git worktree`). Each row runs once per binary at
# procs 1 with --quick and --runs 1 (a warm-up run and a measured one)
# under `valgrind --tool=callgrind`, two at a time; the table gives each
# process's total instruction count and NEW/OLD. Set OLD_POLICY or
# NEW_POLICY (GORO_POLICY syntax) to compare two policies of one binary.
#
# Why instructions: on a shared machine a 5% change in time is inside the
# noise of one run, while the instruction count of a procs 1 run is the
# same from run to run (the spin and park paths of procs 2 are not, so
# procs 1 only). It counts work, not cache misses or contention: use it
# beside the interleaved timings, not instead of them. Needs valgrind.
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,18p "$0"; exit 2; }
old=$1 new=$2
shift 2
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(spawn_chain spawn_many yield_many ping_pong ring/n=10 ring/n=1000
    ring_buf/n=10 ring_buf/n=1000 chan_uncontended chan_contended chan_prodcons/cap=0
    chan_prodcons/cap=10 chan_prodcons/cap=100 select_uncontended select_contended
    after_func_1000 after stop start_stop_1000 reset sleep_1000 ticker)
for b in "$old" "$new"; do
    [ -x "$b" ] || { echo "instructions.sh: $b is not an executable goro-bench binary" >&2; exit 2; }
done
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind on PATH (apt-get install valgrind)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
count() { # side bin policy row
    local out="$dir/$1-${4//[\/=]/_}.out"
    GORO_POLICY=${3:-} valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$2" run "$4" --impl goro --procs 1 --runs 1 --quick >"$out.log" 2>&1 ||
        { echo "instructions.sh: $4 failed under $2; its output:" >&2; cat "$out.log" >&2; exit 1; }
    awk '/^(summary|totals):/ {print $2; exit}' "$out"
}
printf '%-26s %15s %15s %8s\n' "row (procs 1, --quick)" "old Ir" "new Ir" "new/old"
for r in "${rows[@]}"; do
    count old "$old" "${OLD_POLICY:-}" "$r" >"$dir/a" &
    pa=$!
    count new "$new" "${NEW_POLICY:-}" "$r" >"$dir/b" &
    pb=$!
    wait $pa && wait $pb
    a=$(cat "$dir/a") b=$(cat "$dir/b")
    awk -v r="$r" -v a="$a" -v b="$b" 'BEGIN { printf "%-26s %15d %15d %8.3f%s\n", r, a, b, b / a, (b / a > 1.05 ? "  >5%" : "") }'
done
