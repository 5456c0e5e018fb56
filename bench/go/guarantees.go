package main

// Scheduling guarantees, in the sched group of goro-bench/README.md: rows that check
// what Go's scheduler promises rather than how fast it is (goro-bench:
// src/workloads/guarantees.rs, read side by side).
//
//   - A ready goroutine must not wait behind a busy one while a P idles
//     (spawn_busy, wake_busy: a goroutine made ready by a goroutine that then
//     computes for 20 ms; at GOMAXPROCS >= 2 another P is idle and steals it).
//   - A goroutine that never blocks must not starve its P (hog,
//     ping_pong_hog: a goroutine whose channel operations all complete at
//     once, beside goroutines that need the P now and then).
//
// Each workload's header comment says exactly what one op is and how many ops
// one run does (normal / -quick).

import (
	"sync"
	"sync/atomic"
	"time"
)

func init() {
	register(
		Workload{"spawn_busy", "sched", "one spawn by a goroutine that then spins 20 ms; extra p50_ns, max_ns of spawn-to-first-run", spawnBusy},
		Workload{"wake_busy", "sched", "one send to a parked goroutine by a goroutine that then spins 20 ms; extra p50_ns, max_ns of send-to-recv-return", wakeBusy},
		Workload{"hog", "sched", "one send+recv on a goroutine's own cap-1 channel for 300 ms beside a 1 ms sleeper; extra max_gap_ns, hog_ops_per_s", hog},
		Workload{"ping_pong_hog", "sched", "one ping-pong round trip (two rendezvous hand-offs) beside a goroutine polling a select with default (BenchmarkPingPongHog)", pingPongHog},
	)
}

// Parameters (goro-bench: BUSY, WAKE_SETTLE, HOG_BATCH, HOG_TICK).
const (
	busySpin   = 20 * time.Millisecond // spawn_busy, wake_busy: the busy stretch
	wakeSettle = time.Millisecond      // wake_busy: pause so the child is surely parked
	hogBatch   = 128                   // hog: iterations between two looks at the clock
	hogTick    = time.Millisecond      // hog: the sleeper's period
)

// spinUntil computes until deadline: one CPU-bound stretch, no blocking
// call (only Go's asynchronous preemption can interrupt it).
func spinUntil(deadline time.Time) {
	for time.Now().Before(deadline) {
	}
}

// busyOut reports spawn_busy / wake_busy: the latencies' p50 and exact max.
func busyOut(b *B, reps int, h *Histogram, maxNs int64) {
	b.SetOps(reps)
	b.Extra("p50_ns", round2(h.Quantile(0.5)))
	b.Extra("max_ns", maxNs)
	b.Extra("busy_ms", busySpin.Milliseconds())
}

// spawnBusy — spawn_busy.
//
// One op = one rep. Per rep the benchmark goroutine records t0, starts a
// child that stores time.Since(t0) and calls wg.Done(), then spins until
// t0 + 20 ms (no blocking call), then waits for the child. Latency = the
// child's start − t0, into a histogram (hist.go); extras p50_ns and max_ns
// (exact). The guarantee: a ready goroutine must not wait behind a busy one
// while a P idles. At GOMAXPROCS >= 2 a second P is idle and steals the
// child from the spinner's runnext (~0.1 ms); at 1 it waits for the spin to
// end (or for sysmon's preemption at 10 ms). The measured region is all reps
// (≈ 20 ms each).
// Ops: 40 normal, 10 quick.
func spawnBusy(b *B) {
	reps := b.Size(40, 10)
	h := new(Histogram)
	var maxNs int64
	b.Start()
	for r := 0; r < reps; r++ {
		var lat int64
		var done sync.WaitGroup
		done.Add(1)
		t0 := time.Now()
		go func() {
			lat = int64(time.Since(t0))
			done.Done()
		}()
		spinUntil(t0.Add(busySpin))
		done.Wait()
		h.Record(lat)
		maxNs = max(maxNs, lat)
	}
	b.Stop()
	busyOut(b, reps, h, maxNs)
}

// wakeBusy — wake_busy.
//
// One op = one rep. A child goroutine is started before the clock; it loops
// `ready <- struct{}{}; t0, ok := <-ch; lat <- time.Since(t0)` until ch is
// closed. Per rep the benchmark goroutine receives the readiness signal,
// sleeps 1 ms (so the child is surely parked in its receive), records t0,
// sends t0 on ch (capacity 1, empty: does not block), spins until t0 + 20 ms
// (no blocking call), then receives the latency. Latency = the child's return
// from the receive − t0; extras p50_ns and max_ns (exact). The guarantee: a
// goroutine woken by a busy one must not wait behind it while a P idles (at
// GOMAXPROCS >= 2). Channels ch, ready, lat all have capacity 1. The measured
// region is all reps (≈ 21 ms each).
// Ops: 40 normal, 10 quick.
func wakeBusy(b *B) {
	reps := b.Size(40, 10)
	ch := make(chan time.Time, 1)
	ready := make(chan struct{}, 1)
	lat := make(chan int64, 1)
	var exited sync.WaitGroup
	exited.Add(1)
	go func() {
		defer exited.Done()
		for {
			ready <- struct{}{}
			t0, ok := <-ch
			if !ok {
				return
			}
			lat <- int64(time.Since(t0))
		}
	}()
	h := new(Histogram)
	var maxNs int64
	b.Start()
	for r := 0; r < reps; r++ {
		<-ready
		time.Sleep(wakeSettle)
		t0 := time.Now()
		ch <- t0
		spinUntil(t0.Add(busySpin))
		ns := <-lat
		h.Record(ns)
		maxNs = max(maxNs, ns)
	}
	b.Stop()
	close(ch)
	exited.Wait()
	busyOut(b, reps, h, maxNs)
}

// hog — hog.
//
// One op = one hog iteration: `ch <- i; <-ch` on the hog's own
// make(chan int, 1) (neither ever blocks). The hog loops for D (300 ms
// normal, 100 ms quick, from the start of the measured region), looking at
// the clock every 128 iterations; beside it a sleeper loops
// time.Sleep(time.Millisecond) and records the longest gap between
// consecutive wake-ups (the first gap counted from the start), until it wakes
// to find the hog done. Extras: max_gap_ns (the sleeper's longest gap: ~1 ms
// when the hog is preempted, up to D when it starves its P; at GOMAXPROCS 1
// Go's sysmon preempts it after 10 ms) and hog_ops_per_s (iterations / the
// hog's own elapsed time). The guarantee: a goroutine that never blocks must
// not starve its P. Both goroutines are started at the start of the measured
// region, which ends when both have returned.
// Ops: the iterations done in D = 300 ms normal, 100 ms quick.
func hog(b *B) {
	dur := time.Duration(b.Size(300, 100)) * time.Millisecond
	ch := make(chan int, 1)
	var n int
	var hogNs, maxGap int64
	var stop atomic.Bool
	var done sync.WaitGroup
	done.Add(2)
	b.Start()
	start := time.Now()
	go func() {
		defer done.Done()
		for time.Since(start) < dur {
			for j := 0; j < hogBatch; j++ {
				ch <- n
				<-ch
				n++
			}
		}
		hogNs = int64(time.Since(start))
		stop.Store(true)
	}()
	go func() {
		defer done.Done()
		last := start
		for {
			time.Sleep(hogTick)
			now := time.Now()
			maxGap = max(maxGap, int64(now.Sub(last)))
			last = now
			if stop.Load() {
				return
			}
		}
	}()
	done.Wait()
	b.Stop()
	b.SetOps(n)
	b.Extra("max_gap_ns", maxGap)
	b.Extra("hog_ops_per_s", round2(float64(n)/(float64(hogNs)/1e9)))
}

// pingPongHog — ping_pong_hog (BenchmarkPingPongHog in
// $GOROOT/src/runtime/proc_test.go, that shape exactly).
//
// A hog goroutine loops `select { case <-stop: done <- true; return;
// default: }`, beside a ping-pong over two unbuffered channels: goroutine A
// does N times `pong <- <-ping`, then close(stop) and `done <- true`;
// goroutine B does N times `ping <- <-pong`, then `done <- true`. The
// benchmark goroutine starts the ball with `ping <- true` and waits for stop
// to close (the measured region), then receives B's last ping and the three
// dones. One op = one ping-pong round trip. Go's benchmark pins GOMAXPROCS 1
// (the -procs 1 row); this runs at any -procs. The guarantee: a goroutine that
// never blocks must not starve the goroutines that share its P.
// Ops: N = 100,000 normal, 20,000 quick.
func pingPongHog(b *B) {
	n := b.Size(100_000, 20_000)

	// Create a CPU hog
	stop, done := make(chan bool), make(chan bool)
	go func() {
		for {
			select {
			case <-stop:
				done <- true
				return
			default:
			}
		}
	}()

	// Ping-pong n times
	ping, pong := make(chan bool), make(chan bool)
	go func() {
		for j := 0; j < n; j++ {
			pong <- <-ping
		}
		close(stop)
		done <- true
	}()
	go func() {
		for i := 0; i < n; i++ {
			ping <- <-pong
		}
		done <- true
	}()
	b.Start()
	ping <- true // Start ping-pong
	<-stop
	b.Stop()
	<-ping // Let last ponger exit
	<-done // Make sure goroutines exit
	<-done
	<-done
	b.SetOps(n)
}
