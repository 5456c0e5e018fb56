#!/usr/bin/env bash
# The workspace's test binaries under valgrind memcheck: zero errors and zero
# definite leaks, or a non-zero exit. See scripts/README.md.
#
#   nice -n 10 scripts/valgrind.sh --full       # every test binary, and the raw file
#   nice -n 10 scripts/valgrind.sh              # every test binary (no raw file)
#   nice -n 19 scripts/valgrind.sh sched_basic pool_cycle   # only these
#   scripts/valgrind.sh --ci                     # CI's subset (.ci/run)
#
# Every test binary: every crate of the workspace (goro, goro-http,
# goro-macros, goro-bench), unit tests and integration tests, built with
# every feature (`--all-features`, as clippy builds them, so the hyper,
# metrics and tokio-io tests are in). --full also writes the summary, with
# the skips and the totals, to bench/results/DATE-memcheck-all-COMMIT.txt.
#
# Environment: VALGRIND_JOBS (binaries at once, default 2), VALGRIND_TIMEOUT
# (seconds per binary, default 1200), VALGRIND_BUDGET (seconds for the whole
# memcheck phase; binaries not started by then are listed as not run and
# fail the command; default 0 = no budget), VALGRIND_OUT (logs, default
# target/valgrind), VALGRIND_RAW (--full's raw file instead of the default).
#
# Release build, not debug: the tests carry wall-clock deadlines (60 s for a
# whole stress test) and memcheck slows code 20-50x; unoptimised code is
# another ~10x on top, which trips those deadlines and takes hours on a small
# machine. The release profile keeps line tables (`debug = 1` in the
# workspace Cargo.toml), so memcheck's stacks still name files and lines.
# Debug assertions are the plain `cargo test`'s job.
#
# Not covered: doc tests (rustdoc builds and runs them itself, no binary to
# put under memcheck) and the `#[ignore]`d soak (minutes of load; it runs
# natively); the binaries and tests in SKIP_BINS and SKIPS below, each with
# its reason.
set -euo pipefail
cd "$(dirname "$0")/.."
script_start=$SECONDS

# CI's subset: at least one binary per subsystem, chosen for coverage per
# second under memcheck (61 s under memcheck, 6 min 43 s with the release
# build on the loaded 2-core VM, most of it goro-http's dev-dependencies;
# RELIABILITY.md, "Memory"):
#   scheduler sched_basic, channels chan_basic, timers time_chan_timers,
#   pool pool_cycle, net net_echo, HTTP goro-http's http (the server over
#   HTTP/1.1 and HTTP/2), trace observe_trace, dump observe_dump, resize
#   sched_resize.
CI_SUBSET=(sched_basic chan_basic time_chan_timers pool_cycle net_echo http observe_trace observe_dump sched_resize)
full=0
case "${1:-}" in
    --ci)
        shift
        set -- "${CI_SUBSET[@]}" "$@"
        ;;
    --full)
        shift
        full=1
        (($# == 0)) || { echo "valgrind.sh: --full takes no binary names" >&2; exit 2; }
        ;;
esac

JOBS=${VALGRIND_JOBS:-2}
TIMEOUT=${VALGRIND_TIMEOUT:-1200}
BUDGET=${VALGRIND_BUDGET:-0}
OUT=${VALGRIND_OUT:-target/valgrind}
SUPP=scripts/valgrind.supp

# valgrind and jq (which reads cargo's JSON): installed with apt-get when
# missing and the script runs as root (CI); otherwise it says what to install.
if ! command -v valgrind >/dev/null || ! command -v jq >/dev/null; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "=== installing valgrind and jq (apt-get)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind jq >/dev/null
    fi
fi
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind not found on PATH (apt-get install valgrind)" >&2; exit 2; }
command -v jq >/dev/null || { echo "valgrind.sh: jq not found on PATH (it reads cargo's JSON; apt-get install jq)" >&2; exit 2; }

# Tests skipped under valgrind, as "binary test-name-substring reason".
# Each is run natively by `cargo test`; under memcheck it cannot pass or
# takes too long, for the reason given.
SKIPS=(
    # valgrind applies a lowered RLIMIT_NOFILE itself, after the kernel call:
    # accept() dequeues the pending connection, valgrind closes the new
    # descriptor ("invalid file descriptor 512") and reports EMFILE. The
    # connection the test expects to stay queued is gone, so its later
    # accept waits until the 60 s deadline.
    "net_emfile accept_under_emfile_returns_the_error_and_recovers (valgrind's own fd limit)"
    "net_server the_accept_loop_backs_off_under_emfile_and_serves_again (valgrind's own fd limit)"
    # Wall-clock service bounds (each normal request answered within 2 s
    # while 1000 slow-loris connections are cut): a latency property of
    # native code, missed under memcheck's 20-50x slowdown.
    "net_server slow_loris_clients_are_cut_by_the_read_deadline_while_normal_clients_are_served (2 s answer bound)"
    "net_hyper header_read_timeout_cuts_1000_slow_loris_heads_while_hyper_clients_are_served (2 s answer bound)"
    # Go's TestNonblockSelectRace: 100,000 trials per test whose two sides
    # spin until both have started. memcheck runs one thread at a time, so
    # the sides cannot overlap and each test runs into its 120 s limit
    # (measured 2026-11-25: 278 s for the first four tests, three of them
    # timed out). The binary's other tests (select_stress, select_fairness)
    # run; the same channel and select code is under memcheck in
    # chan_select, chan_basic and the other chan_* binaries.
    "chan_select_go nonblock_select_race (100,000-trial races between two spinning threads)"
)

# Binaries skipped whole under valgrind, as "binary reason". Each runs
# natively in `cargo test`. A binary with only some tests that cannot run
# under memcheck is not here: those tests are in SKIPS.
SKIP_BINS=(
    # trybuild compile-fail tests: they run cargo and rustc on test crates
    # (memcheck does not follow child processes, so none of goro's code
    # runs under it) and need cargo's environment, so started by this
    # script they fail natively too.
    "must_use (trybuild: compiles, runs nothing of goro's)"
    "select_errors (trybuild: compiles, runs nothing of goro's)"
)

# Tests that panic on purpose would have std symbolise a backtrace under
# memcheck (seconds each, and a process-wide cache of ~20 MB that shows up
# as "still reachable"); the panic messages are enough.
export RUST_BACKTRACE=0

# Proc-macro test binaries link libstd dynamically; cargo sets this for `cargo test`.
sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
export LD_LIBRARY_PATH="$sysroot/lib:$sysroot/lib/rustlib/$host/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# Named binaries that are all integration tests of workspace crates
# (CRATE/tests/NAME.rs): build only those, one cargo call per crate, with
# the crate's default features (CI's subset: goro's library is then the one
# the soak step built before it); otherwise every test binary of the
# workspace, every feature on.
builds=()
if (($# > 0)); then
    declare -A tests_of=()
    for name in "$@"; do
        found=$(ls -d -- */tests/"$name".rs 2>/dev/null | head -n 1 || true)
        if [[ -z "$found" ]]; then
            tests_of=()
            break
        fi
        crate=$(sed -n 's/^name = "\(.*\)"/\1/p' "${found%%/*}/Cargo.toml" | head -n 1)
        tests_of[$crate]+=" --test $name"
    done
    for crate in "${!tests_of[@]}"; do
        builds+=("-p $crate${tests_of[$crate]}")
    done
fi
((${#builds[@]} > 0)) || builds=("--workspace --all-features")
bins=""
for b in "${builds[@]}"; do
    echo "=== building test binaries (release): $b"
    # shellcheck disable=SC2086 # $b is a list of cargo arguments
    bins+=$(cargo test --release $b --no-run --message-format=json |
        jq -r 'select(.reason == "compiler-artifact" and .executable != null and .profile.test)
               | "\(.target.name) \(.executable)"')$'\n'
done
bins=$(sort -u <<<"$bins" | sed '/^$/d')
[[ -n "$bins" ]] || { echo "valgrind.sh: cargo listed no test binaries" >&2; exit 2; }
dupes=$(awk '{print $1}' <<<"$bins" | sort | uniq -d)
[[ -z "$dupes" ]] || { echo "valgrind.sh: two test binaries share a name: $dupes" >&2; exit 2; }
build_secs=$((SECONDS - script_start))

rm -rf "$OUT"
mkdir -p "$OUT"
named=$(($# > 0))

# One binary: valgrind's log in $OUT/NAME.log, the tests' output in
# $OUT/NAME.out, and one result line in $OUT/NAME.result.
run_one() {
    local name=$1 exe=$2
    local args=(--test-threads=1)
    local s bin rest
    for s in "${SKIPS[@]}"; do
        read -r bin rest <<<"$s"
        if [[ "$bin" == "$name" ]]; then
            args+=(--skip "${rest%% *}")
        fi
    done
    local t0=$SECONDS rc=0
    # --fair-sched=yes: memcheck runs one thread at a time; the default lock
    # lets a thread that spins (wait_until, a spinning M) starve the one it
    # waits for. --errors-for-leak-kinds=definite: a definite leak is an
    # error (exit 99); indirect and possible ones are only counted.
    timeout --signal=KILL "$TIMEOUT" valgrind \
        --tool=memcheck \
        --error-exitcode=99 \
        --leak-check=full \
        --show-leak-kinds=definite,indirect \
        --errors-for-leak-kinds=definite \
        --fair-sched=yes \
        --num-callers=40 \
        --gen-suppressions=all \
        --suppressions="$SUPP" \
        --log-file="$OUT/$name.log" \
        "$exe" "${args[@]}" >"$OUT/$name.out" 2>&1 || rc=$?
    local secs=$((SECONDS - t0))
    local log="$OUT/$name.log"
    num() { grep -oP "$1" "$log" | tail -n 1 | tr -d , || true; }
    local errors definite indirect possible tests verdict
    errors=$(num 'ERROR SUMMARY: \K[0-9,]+')
    definite=$(num 'definitely lost: \K[0-9,]+')
    indirect=$(num 'indirectly lost: \K[0-9,]+')
    possible=$(num 'possibly lost: \K[0-9,]+')
    tests=$(grep -oP '^test result: \K.*?(?=; finished)' "$OUT/$name.out" | awk -F'; ' '{print $1"; "$2"; "$5}' | paste -sd' ' || true)
    : "${definite:=0}" "${indirect:=0}" "${possible:=0}"
    local ran
    ran=$(grep -oP '^test result: \w+\. \K[0-9]+ passed; [0-9]+(?= failed)' "$OUT/$name.out" |
        awk '{s += $1 + $3} END {print s + 0}')
    if [[ -z "$errors" ]]; then
        verdict="FAIL (no valgrind summary: killed after ${TIMEOUT}s or crashed, rc=$rc)"
    elif ((named && ran == 0)); then
        # A binary asked for by name (CI's subset) that ran nothing: a
        # renamed file or a feature that no longer enables its tests.
        verdict="FAIL (ran no tests)"
    elif ((errors > 0 || definite > 0)); then
        verdict="FAIL (memcheck)"
    elif ((rc != 0)); then
        verdict="FAIL (tests, rc=$rc)"
    else
        verdict="ok"
    fi
    printf '%-22s %-44s errors=%-3s definite=%-6s indirect=%-6s possible=%-6s %5ss  %s\n' \
        "$name" "$verdict" "${errors:-?}" "$definite" "$indirect" "$possible" "$secs" "${tests:-no test result}" \
        | tee "$OUT/$name.result"
}

# The binaries that took longest under memcheck (the 2026-11-27 full run,
# bench/results/2026-11-27-memcheck-all-*.txt) start first, so two at a time
# finish together instead of one long binary running alone at the end.
SLOW_FIRST=(pool_stress chan_runtime compat chan_select_go http observe_trace observe_dump)

selected=()
skipped_bins=()
while read -r name exe; do
    if (($# == 0)) || [[ " $* " == *" $name "* ]]; then
        for s in "${SKIP_BINS[@]}"; do
            if [[ "${s%% *}" == "$name" ]]; then
                echo "skipped: $s"
                skipped_bins+=("$s")
                continue 2
            fi
        done
        selected+=("$name $exe")
    fi
done <<<"$bins"
((${#selected[@]} > 0)) || { echo "valgrind.sh: no test binary named $*" >&2; exit 2; }
ordered=()
for slow in "${SLOW_FIRST[@]}"; do
    for entry in "${selected[@]}"; do
        [[ "${entry%% *}" == "$slow" ]] && ordered+=("$entry")
    done
done
for entry in "${selected[@]}"; do
    [[ " ${SLOW_FIRST[*]} " == *" ${entry%% *} "* ]] || ordered+=("$entry")
done

echo "=== memcheck: ${#ordered[@]} binaries, $JOBS at a time, logs in $OUT"
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
start=$SECONDS
for entry in "${ordered[@]}"; do
    while (($(jobs -rp | wc -l) >= JOBS)); do
        wait -n || true
    done
    if ((BUDGET > 0 && SECONDS - start >= BUDGET)); then
        printf '%-22s %-44s\n' "${entry%% *}" "FAIL (not run: VALGRIND_BUDGET=${BUDGET}s spent)" \
            | tee "$OUT/${entry%% *}.result"
        continue
    fi
    run_one $entry &
done
wait
memcheck_secs=$((SECONDS - start))

# Totals over the result lines: tests run (passed + failed), errors and
# bytes definitely lost.
totals=$(cat "$OUT"/*.result | awk '
    { for (i = 1; i <= NF; i++) {
          if ($i ~ /^errors=[0-9]+$/) { split($i, a, "="); e += a[2] }
          if ($i ~ /^definite=[0-9]+$/) { split($i, a, "="); d += a[2] }
          if ($i == "passed;") p += $(i - 1)
          if ($i == "failed;") f += $(i - 1)
      } }
    END { printf "%d tests run (%d passed, %d failed), %d memcheck errors, %d bytes definitely lost", p + f, p, f, e, d }')
failed=$(cat "$OUT"/*.result | awk '$2 != "ok"' | wc -l)

echo
echo "=== summary (${memcheck_secs}s)"
cat "$OUT"/*.result
echo "totals: ${#ordered[@]} binaries, $totals; $failed binaries failed"

if ((full)); then
    commit=$(git rev-parse --short HEAD)
    raw=${VALGRIND_RAW:-bench/results/$(date +%F)-memcheck-all-$commit.txt}
    dirty=$(git status --short --untracked-files=no | wc -l)
    {
        echo "# nice -n 10 scripts/valgrind.sh --full   (every test binary of every workspace crate, --all-features, release)"
        echo "# commit $commit$( ((dirty > 0)) && echo " plus uncommitted changes in $dirty tracked files"), $(date -u +%Y-%m-%dT%H:%MZ)"
        echo "# $(nproc) CPUs, $(valgrind --version), $(rustc --version)"
        echo "# load average (1, 5, 15 min): $load_start at the start of memcheck, $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown) at the end"
        echo "# wall time: ${build_secs}s build, ${memcheck_secs}s memcheck ($JOBS binaries at a time, ${TIMEOUT}s limit each), $((SECONDS - script_start))s in all"
        echo "# columns: binary, verdict, memcheck errors, bytes definitely / indirectly / possibly lost, seconds, the tests' own result"
        echo "# not run under memcheck (each runs natively in cargo test):"
        echo "#   doc tests (rustdoc builds and runs them itself) and the #[ignore]d soak"
        for s in "${skipped_bins[@]}"; do echo "#   binary $s"; done
        for s in "${SKIPS[@]}"; do echo "#   tests matching: $s"; done
        cat "$OUT"/*.result
        echo "totals: ${#ordered[@]} binaries, $totals; $failed binaries failed"
    } >"$raw"
    echo "wrote $raw"
fi

if ((failed > 0)); then
    echo "valgrind.sh: $failed binaries failed; see $OUT/NAME.log (memcheck) and $OUT/NAME.out (tests)"
    exit 1
fi
echo "valgrind.sh: all ${#ordered[@]} binaries clean"
