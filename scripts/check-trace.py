#!/usr/bin/env python3
"""Checks a goro execution trace with Perfetto's official trace schema.

Usage: check-trace.py TRACE [--stats STATS.json] [--snapshot WINDOW_S]

Decodes TRACE (Perfetto's protobuf format, as written by GORO_TRACE,
Runtime::trace_start or a FlightRecorder snapshot) with the
`perfetto_trace_pb2` module that ships in the `perfetto` Python package,
then checks:

  * the packets: one trusted sequence, whose first packet clears the
    incremental state; timestamps never go backwards; every slice end
    closes a slice begun on its track;
  * every task started is stopped: no poll slice (on a P or a thread) and
    no "running" slice on a task track is left open (a snapshot may end
    in the middle of polls: there, only the ones still open at the end);
  * every unblock has a matching start: each flow begun by a `spawn` or
    `wake` instant is ended by the next poll of the same task, and every
    poll (but one continued after block_in_place) ends exactly one flow,
    begun earlier for the same task;
  * per-P slices never overlap: on a P track, no poll begins while a poll
    is open, and no "held by M" slice begins while one is open;
  * with --stats (the `TRACE.stats.json` that GORO_TRACE writes beside
    the trace when the runtime drops): the trace's counts equal the
    runtime's counters (spawns, polls on a P, steals, timers fired,
    netpoll results, M parks and wakes, preemptions, block_in_place
    handoffs);
  * with --snapshot WINDOW_S (a flight recorder snapshot): no task lost
    history inside the last WINDOW_S seconds: a poll in the window whose
    wake is missing is allowed only when nothing of that task precedes
    it inside the window.

Prints a summary and exits 1 on the first failed check (all failures are
listed).
"""

import argparse
import collections
import json
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

GROUP_P, GROUP_M, GROUP_TASKS = 2, 3, 4
TE = pb.TrackEvent
BEGIN, END, INSTANT = TE.TYPE_SLICE_BEGIN, TE.TYPE_SLICE_END, TE.TYPE_INSTANT


def annots(ev):
    out = {}
    for a in ev.debug_annotations:
        if a.HasField("uint_value"):
            out[a.name] = a.uint_value
        elif a.HasField("string_value"):
            out[a.name] = a.string_value
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--stats")
    ap.add_argument("--snapshot", type=float, metavar="WINDOW_S")
    args = ap.parse_args()
    snapshot = args.snapshot is not None

    trace = pb.Trace()
    with open(args.trace, "rb") as f:
        trace.ParseFromString(f.read())
    fails = []

    def fail(msg):
        fails.append(msg)

    tracks = {}  # uuid -> (name, parent)
    stacks = collections.defaultdict(list)  # uuid -> [(name, ts, annots)]
    counts = collections.Counter()
    flows = {}  # flow id -> (task, ts)
    ended_flows = set()
    task_events = collections.defaultdict(list)  # task -> [(ts, what)]
    polls_without_flow = []  # (task, ts)
    last_ts = 0
    first_ts = None
    seqs = set()

    for i, pkt in enumerate(trace.packet):
        seqs.add(pkt.trusted_packet_sequence_id)
        if i == 0 and not (pkt.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED):
            fail("the first packet does not clear the incremental state")
        if pkt.HasField("track_descriptor"):
            td = pkt.track_descriptor
            tracks[td.uuid] = (td.name, td.parent_uuid)
            continue
        if not pkt.HasField("track_event"):
            continue
        ev = pkt.track_event
        ts = pkt.timestamp
        if ts < last_ts:
            fail(f"packet {i}: timestamp {ts} before the previous one {last_ts}")
        last_ts = ts
        first_ts = ts if first_ts is None else first_ts
        if ev.track_uuid not in tracks:
            fail(f"packet {i}: event on undeclared track {ev.track_uuid}")
            continue
        name, parent = tracks[ev.track_uuid]
        a = annots(ev)
        st = stacks[ev.track_uuid]
        if ev.type == BEGIN:
            if parent == GROUP_P:
                is_poll = "task" in a
                if is_poll and any("task" in x[2] for x in st):
                    fail(f"{name}: poll of {ev.name} at {ts} overlaps the open {st[-1][0]}")
                if not is_poll and any("task" not in x[2] for x in st):
                    fail(f"{name}: {ev.name} at {ts} begins while {st[-1][0]} holds the P")
                if is_poll and not a.get("cont"):
                    counts["polls_on_p"] += 1
            if parent == GROUP_M and ev.name == "parked":
                counts["parks"] += 1
            if parent == GROUP_M and ev.name == "block_in_place":
                counts["handoffs"] += 1
            if "task" in a and parent in (GROUP_P, GROUP_M):
                counts["polls"] += 1
                task_events[a["task"]].append((ts, "poll"))
                terms = list(ev.terminating_flow_ids)
                if a.get("cont"):
                    if terms:
                        fail(f"{name}: a continued poll at {ts} ends a flow")
                elif len(terms) != 1:
                    polls_without_flow.append((a["task"], ts))
                for fl in terms:
                    if fl not in flows:
                        fail(f"poll of task {a['task']} at {ts} ends flow {fl}, never begun")
                    elif flows[fl][0] != a["task"]:
                        fail(f"flow {fl} begun for task {flows[fl][0]} ends at a poll of task {a['task']}")
                    elif fl in ended_flows:
                        fail(f"flow {fl} ended twice")
                    ended_flows.add(fl)
            st.append((ev.name, ts, a))
        elif ev.type == END:
            if not st:
                fail(f"{name}: slice end at {ts} with nothing open")
                continue
            st.pop()
        elif ev.type == INSTANT:
            n = a.get("n", 1)
            if ev.name == "spawn":
                if not a.get("blocking"):
                    counts["spawns"] += 1
                counts["spawns_all"] += 1
            elif ev.name == "wake":
                counts["wakes"] += 1
            elif ev.name.startswith("steal from"):
                counts["steals"] += n
            elif ev.name == "timers":
                counts["timers_fired"] += n
            elif ev.name == "netpoll":
                counts["netpoll_ready"] += n
            elif ev.name == "wake M":
                counts["unparks"] += 1
            elif ev.name == "preempted":
                counts["preemptions"] += 1
            elif ev.name == "destroyed":
                counts["destroyed"] += 1
            if ev.name in ("spawn", "wake"):
                for fl in ev.flow_ids:
                    if fl in flows:
                        fail(f"flow {fl} begun twice")
                    flows[fl] = (a["task"], ts)
                task_events[a["task"]].append((ts, ev.name))

    if len(seqs) != 1:
        fail(f"packets on {len(seqs)} sequences, expected 1")

    # Every task started is stopped.
    open_polls = 0
    for uuid, st in stacks.items():
        name, parent = tracks[uuid]
        for (sname, ts, a) in st:
            is_poll = "task" in a and parent in (GROUP_P, GROUP_M)
            is_running = parent == GROUP_TASKS and sname.startswith("running")
            if is_poll or is_running:
                open_polls += 1
                if not snapshot:
                    fail(f"{name}: {sname} begun at {ts} never ended")

    # Every unblock has a matching start.
    never_polled = 0
    polled_later = collections.defaultdict(list)
    for task, evs in task_events.items():
        polled_later[task] = sorted(ts for ts, w in evs if w == "poll")
    window_start = None
    if snapshot:
        window_start = last_ts - int(args.snapshot * 1e9)
    cut_flows = 0
    for fl, (task, ts) in flows.items():
        if fl in ended_flows:
            continue
        if snapshot and ts < window_start:
            # Begun before the window: the poll it led to may be in a
            # buffer the recorder has dropped.
            cut_flows += 1
            continue
        later = [p for p in polled_later[task] if p > ts]
        if later:
            fail(f"flow {fl} (task {task} woken at {ts}) not ended by its next poll at {later[0]}")
        else:
            never_polled += 1
    in_window = 0
    if snapshot:
        in_window = sum(1 for evs in task_events.values() for t, w in evs if w == "poll" and t >= window_start)
    for task, ts in polls_without_flow:
        if not snapshot:
            fail(f"poll of task {task} at {ts} ends no flow (its wake is missing)")
            continue
        if ts < window_start:
            continue
        before = [t for t, _ in task_events[task] if window_start <= t < ts]
        if before:
            fail(f"task {task}: poll at {ts} inside the window lost its wake (history lost)")

    print(f"trace: {args.trace}")
    print(f"  packets {len(trace.packet)}, tracks {len(tracks)} "
          f"(P {sum(1 for n, p in tracks.values() if p == GROUP_P)}, "
          f"M {sum(1 for n, p in tracks.values() if p == GROUP_M)}, "
          f"tasks {sum(1 for n, p in tracks.values() if p == GROUP_TASKS)}), "
          f"span {(last_ts - (first_ts or 0)) / 1e6:.1f} ms")
    print(f"  polls {counts['polls']} (on a P {counts['polls_on_p']}), spawns {counts['spawns_all']}, "
          f"wakes {counts['wakes']}, flows {len(flows)} ended {len(ended_flows)} "
          f"(never polled after: {never_polled}), destroyed {counts['destroyed']}")
    if snapshot:
        print(f"  snapshot: window {args.snapshot}s from {window_start}, flows begun before it and cut {cut_flows}, "
              f"polls open at the end {open_polls}, polls inside the window {in_window} "
              f"(each one's wake present, unless it is the task's first event there), "
              f"polls whose wake was cut: {len(polls_without_flow)}")

    if args.stats:
        with open(args.stats) as f:
            stats = json.load(f)
        pairs = [
            ("tasks_spawned", "spawns"),
            ("tasks_polled", "polls_on_p"),
            ("steals", "steals"),
            ("timers_fired", "timers_fired"),
            ("netpoll_ready", "netpoll_ready"),
            ("parks", "parks"),
            ("unparks", "unparks"),
            ("preemptions", "preemptions"),
            ("handoffs", "handoffs"),
        ]
        for stat, key in pairs:
            ok = stats[stat] == counts[key]
            print(f"  Stats.{stat:<14} {stats[stat]:>10}  trace {counts[key]:>10}  {'ok' if ok else 'MISMATCH'}")
            if not ok:
                fail(f"Stats.{stat} = {stats[stat]} but the trace counts {counts[key]}")

    if fails:
        for m in fails[:50]:
            print("FAIL:", m)
        if len(fails) > 50:
            print(f"FAIL: ... and {len(fails) - 50} more")
        sys.exit(1)
    print("  all checks passed")


if __name__ == "__main__":
    main()
