#!/usr/bin/env bash
# goro-bench built the way a user's crate builds goro: with cargo's default
# release profile (16 codegen units, no debug info) instead of the
# workspace's (4 codegen units, line tables). Inlining across goro's
# boundary depends on the calling crate's codegen units (BENCH_RESULTS.md,
# "Pool"), so numbers from goro-bench's own profile can differ from what a
# program that depends on goro sees. The profile settings are the only
# difference between this and a separate crate with `goro = { path = .. }`.
#
#   scripts/user-profile.sh run spawn_chain,ring --impl goro,go --procs 1,2
#
# Arguments go to goro-bench; the build lives in target/user-profile.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=0
export CARGO_TARGET_DIR=target/user-profile
cargo build --release -p goro-bench
exec target/user-profile/release/goro-bench "$@"
