#!/bin/sh
# Runs scripts/check-trace.py with Perfetto's Python package (which ships
# the trace schema, perfetto_trace_pb2), installed on first use into a
# virtual environment under target/.
#
# Usage: scripts/check-trace.sh TRACE [--stats STATS.json] [--snapshot WINDOW_S]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/target/perfetto-venv"
if ! "$venv/bin/python" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet perfetto==0.59.1 protobuf==7.36.2
fi
exec "$venv/bin/python" "$root/scripts/check-trace.py" "$@"
