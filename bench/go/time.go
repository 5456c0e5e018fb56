package main

// The time group of goro-bench/README.md, after Go's own benchmarks in
// $GOROOT/src/time/sleep_test.go, time/tick_test.go and
// context/benchmark_test.go. Each workload's header comment says exactly what
// one op is and how many ops one run does (normal / -quick). P below is
// -procs.
//
// Every workload in this group runs with 32,768 one-hour timers per P already
// armed (garbage timers, as Go's `benchmark()` helper in sleep_test.go does):
// P goroutines each arm 32,768 `time.AfterFunc(time.Hour, noop)` before the
// clock starts, and every one is stopped after the clock stops (armGarbage /
// stopGarbage). They are never due during a run.
//
// Parallel workloads (Go's RunParallel) split their ops over P goroutines in
// whole batches (perWorker in chan.go); `ops` reports what was actually done.
//
// Note for readers of the numbers: since Go 1.23 a channel timer
// (time.NewTimer, time.After, time.NewTicker) is only put in a P's timer heap
// while a goroutine is blocked receiving from its channel; AfterFunc timers
// (and so context.WithTimeout) go into the heap of the P that arms them
// straight away.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

func init() {
	register(
		Workload{"after_func_1000", "time", "one time.AfterFunc(0) firing, in chains of 1000 that re-arm from the callback (P goroutines)", afterFunc1000},
		Workload{"after", "time", "one <-time.After(1ns) (P goroutines)", timeAfter},
		Workload{"stop", "time", "one time.NewTimer(1s) then Stop() (P goroutines)", timeStop},
		Workload{"simultaneous_after_func_1000", "time", "one time.AfterFunc(0, wg.Done), 1000 armed at once then wg.Wait() (P goroutines)", simultaneousAfterFunc1000},
		Workload{"start_stop_1000", "time", "one time.AfterFunc(1h) plus its Stop(), 1000 armed then 1000 stopped (P goroutines)", startStop1000},
		Workload{"reset", "time", "one Reset(1h) of a goroutine's own timer (P goroutines)", timeReset},
		Workload{"sleep_1000", "time", "one time.Sleep(1ns) by one of 1000 goroutines spawned at once, then wait for all (P spawners)", sleep1000},
		Workload{"ticker", "time", "one tick received from a goroutine's own time.NewTicker(1ns) (P goroutines)", timeTicker},
	)
	for _, c := range []int{40, 4000, 400000} {
		register(Workload{fmt.Sprintf("with_timeout/c=%d", c), "time",
			fmt.Sprintf("10 context.WithTimeout(bg, 1h) created then cancelled, with %d such contexts live (P goroutines)", c),
			withTimeout(c)})
	}
	register(
		Workload{"timer_latency", "time", "one time.AfterFunc(1ms) armed by a busy goroutine, P-1 per round; extra avg_late_ns, max_late_ns", timerLatency},
		Workload{"sleep_fan", "time", "one time.Sleep(1ms), 10,000 goroutines x 100 in a row; extra ideal_ns, overhead_ratio", sleepFan},
	)
}

// garbagePerP is the number of one-hour timers armed per P before each
// workload (1<<15, as in Go's benchmark() helper).
const garbagePerP = 1 << 15

func noop() {}

// armGarbage arms garbagePerP one-hour AfterFunc timers from each of procs
// goroutines (so they land in the timer heaps of the Ps those goroutines run
// on) and returns them for stopGarbage. Runs before b.Start().
func armGarbage(b *B) [][]*time.Timer {
	all := make([][]*time.Timer, b.Procs)
	var wg sync.WaitGroup
	wg.Add(b.Procs)
	for i := range all {
		go func(i int) {
			defer wg.Done()
			g := make([]*time.Timer, garbagePerP)
			for j := range g {
				g[j] = time.AfterFunc(time.Hour, noop)
			}
			all[i] = g
		}(i)
	}
	wg.Wait()
	b.Extra("garbage_timers", b.Procs*garbagePerP)
	return all
}

// stopGarbage stops every timer armGarbage armed. Runs after b.Stop().
func stopGarbage(all [][]*time.Timer) {
	for _, g := range all {
		for _, t := range g {
			t.Stop()
		}
	}
}

// runParallel is the common frame of the RunParallel-shaped workloads: arm
// the garbage timers, park P goroutines running body(i), time them from
// release to the last return, stop the garbage timers, report ops.
func runParallel(b *B, ops int, body func(i int)) {
	garbage := armGarbage(b)
	g := newGang(b.Procs, body)
	b.Start()
	g.release()
	g.wait()
	b.Stop()
	stopGarbage(garbage)
	b.SetOps(ops)
	b.Extra("goroutines", b.Procs)
}

// chainLen is N in AfterFunc1000, SimultaneousAfterFunc1000, StartStop1000
// and Sleep1000.
const chainLen = 1000

// afterFunc1000 — after_func_1000 (Go: BenchmarkAfterFunc1000).
//
// P goroutines; each runs K chains. A chain: n := 1000; f decrements n and,
// while n >= 0, does `time.AfterFunc(0, f)`, else sends on c; the goroutine
// does `time.AfterFunc(0, f)` then `<-c`. That is 1001 AfterFunc firings per
// chain, counted as 1000 (Go's chain, whose op is the whole chain).
// One op = one AfterFunc(0) firing (arm, fire, callback goroutine run).
// K = total/(P*1000).
// Ops: 1,000,000 normal (1000 chains), 100,000 quick (100 chains); rounded
// down to a multiple of P*1000.
func afterFunc1000(b *B) {
	k, ops := perWorker(b.Size(1_000_000, 100_000), b.Procs, chainLen)
	runParallel(b, ops, func(int) {
		for r := 0; r < k; r++ {
			n := chainLen
			c := make(chan bool)
			var f func()
			f = func() {
				n--
				if n >= 0 {
					time.AfterFunc(0, f)
				} else {
					c <- true
				}
			}
			time.AfterFunc(0, f)
			<-c
		}
	})
	b.Extra("n", chainLen)
}

// timeAfter — after (Go: BenchmarkAfter).
//
// P goroutines; each does K times `<-time.After(1ns)` (1 ns = time.Duration(1),
// as Go's bench). One op = one After(1ns) plus the receive of its tick.
// K = total/P.
// Ops: 1,000,000 normal, 100,000 quick (rounded down to a multiple of P).
func timeAfter(b *B) {
	k, ops := perWorker(b.Size(1_000_000, 100_000), b.Procs, 1)
	runParallel(b, ops, func(int) {
		for i := 0; i < k; i++ {
			<-time.After(time.Nanosecond)
		}
	})
}

// timeStop — stop (Go: BenchmarkStop, impl=chan).
//
// P goroutines; each does K times `time.NewTimer(1s).Stop()`.
// One op = one NewTimer(1s) plus its Stop(). K = total/P.
// Ops: 2,000,000 normal, 200,000 quick (rounded down to a multiple of P).
func timeStop(b *B) {
	k, ops := perWorker(b.Size(2_000_000, 200_000), b.Procs, 1)
	runParallel(b, ops, func(int) {
		for i := 0; i < k; i++ {
			time.NewTimer(time.Second).Stop()
		}
	})
}

// simultaneousAfterFunc1000 — simultaneous_after_func_1000 (Go:
// BenchmarkSimultaneousAfterFunc1000).
//
// P goroutines; each does K rounds of: wg.Add(1000); 1000 times
// `time.AfterFunc(0, wg.Done)`; wg.Wait(). One op = one AfterFunc(0) armed
// and fired (its callback goroutine run). K = total/(P*1000).
// Ops: 1,000,000 normal, 100,000 quick (rounded down to a multiple of P*1000).
func simultaneousAfterFunc1000(b *B) {
	k, ops := perWorker(b.Size(1_000_000, 100_000), b.Procs, chainLen)
	runParallel(b, ops, func(int) {
		for r := 0; r < k; r++ {
			var wg sync.WaitGroup
			wg.Add(chainLen)
			for i := 0; i < chainLen; i++ {
				time.AfterFunc(0, wg.Done)
			}
			wg.Wait()
		}
	})
	b.Extra("n", chainLen)
}

// startStop1000 — start_stop_1000 (Go: BenchmarkStartStop1000).
//
// P goroutines, each with its own slice of 1000 *time.Timer (allocated once
// per goroutine; Go's bench makes it per round, on the stack). K rounds of:
// 1000 times `time.AfterFunc(time.Hour, noop)`, then Stop() all 1000.
// One op = one AfterFunc(1h) plus its Stop(). K = total/(P*1000).
// Ops: 2,000,000 normal, 200,000 quick (rounded down to a multiple of P*1000).
func startStop1000(b *B) {
	k, ops := perWorker(b.Size(2_000_000, 200_000), b.Procs, chainLen)
	runParallel(b, ops, func(int) {
		timers := make([]*time.Timer, chainLen)
		for r := 0; r < k; r++ {
			for i := range timers {
				timers[i] = time.AfterFunc(time.Hour, noop)
			}
			for i := range timers {
				timers[i].Stop()
			}
		}
	})
	b.Extra("n", chainLen)
}

// timeReset — reset (Go: BenchmarkReset, impl=chan).
//
// P goroutines; each does `t := time.NewTimer(time.Hour)`, then K times
// `t.Reset(time.Hour)`, then t.Stop(). One op = one Reset(1h). K = total/P.
// Ops: 10,000,000 normal, 1,000,000 quick (rounded down to a multiple of P).
func timeReset(b *B) {
	k, ops := perWorker(b.Size(10_000_000, 1_000_000), b.Procs, 1)
	runParallel(b, ops, func(int) {
		t := time.NewTimer(time.Hour)
		for i := 0; i < k; i++ {
			t.Reset(time.Hour)
		}
		t.Stop()
	})
}

// sleep1000 — sleep_1000 (Go: BenchmarkSleep1000).
//
// P spawner goroutines; each does K rounds of: wg.Add(1000); spawn 1000
// goroutines that each do `time.Sleep(1ns)` then wg.Done(); wg.Wait().
// One op = one goroutine spawned that sleeps 1 ns and finishes.
// K = total/(P*1000).
// Ops: 1,000,000 normal, 100,000 quick (rounded down to a multiple of P*1000).
func sleep1000(b *B) {
	k, ops := perWorker(b.Size(1_000_000, 100_000), b.Procs, chainLen)
	runParallel(b, ops, func(int) {
		for r := 0; r < k; r++ {
			var wg sync.WaitGroup
			wg.Add(chainLen)
			for i := 0; i < chainLen; i++ {
				go func() {
					time.Sleep(time.Nanosecond)
					wg.Done()
				}()
			}
			wg.Wait()
		}
	})
	b.Extra("n", chainLen)
}

// timeTicker — ticker (Go: BenchmarkTicker).
//
// P goroutines; each does `tk := time.NewTicker(1ns)` (inside the measured
// region, as in Go), then K times `<-tk.C`, then tk.Stop(). One op = one tick
// received. K = total/P.
// Ops: 2,000,000 normal, 200,000 quick (rounded down to a multiple of P).
func timeTicker(b *B) {
	k, ops := perWorker(b.Size(2_000_000, 200_000), b.Procs, 1)
	runParallel(b, ops, func(int) {
		tk := time.NewTicker(time.Nanosecond)
		for i := 0; i < k; i++ {
			<-tk.C
		}
		tk.Stop()
	})
}

// withTimeoutBatch is the number of contexts one op creates and cancels
// (len(wcf) in Go's benchmarkWithTimeout).
const withTimeoutBatch = 10

// withTimeout returns with_timeout/c=C (Go: BenchmarkWithTimeout/concurrency=C).
//
// Setup (before the clock, besides the garbage timers): P goroutines each
// create C/P live `context.WithTimeout(context.Background(), time.Hour)` and
// keep their cancel funcs. Measured: P goroutines (fresh ones) each do K
// times: create 10 `context.WithTimeout(context.Background(), time.Hour)`,
// then call their 10 cancel funcs in creation order. After the clock, every
// live context is cancelled. One op = one such round of 10 creates + 10
// cancels (Go's op). K = total/P.
// Ops: 100,000 normal, 10,000 quick (rounded down to a multiple of P), for
// every C.
func withTimeout(c int) func(b *B) {
	return func(b *B) {
		k, ops := perWorker(b.Size(100_000, 10_000), b.Procs, 1)
		perP := c / b.Procs
		root := context.Background()
		live := make([][]context.CancelFunc, b.Procs)
		var wg sync.WaitGroup
		wg.Add(b.Procs)
		for i := range live {
			go func(i int) {
				defer wg.Done()
				cf := make([]context.CancelFunc, perP)
				for j := range cf {
					_, cf[j] = context.WithTimeout(root, time.Hour)
				}
				live[i] = cf
			}(i)
		}
		wg.Wait()

		runParallel(b, ops, func(int) {
			var wcf [withTimeoutBatch]context.CancelFunc
			for r := 0; r < k; r++ {
				for i := range wcf {
					_, wcf[i] = context.WithTimeout(root, time.Hour)
				}
				for _, f := range wcf {
					f()
				}
			}
		})

		for _, cf := range live {
			for _, f := range cf {
				f()
			}
		}
		b.Extra("c", perP*b.Procs)
		b.Extra("batch", withTimeoutBatch)
	}
}

// Timer latency parameters.
const (
	latencyDelay   = time.Millisecond // the timers' delay
	latencyGap     = time.Millisecond // busy gap between rounds (Go: doWork(1ms))
	latencySpinCap = time.Second      // bound on a busy goroutine's spin
)

// spinFor busy-waits (no timers, no blocking) for d. Go: doWork.
func spinFor(d time.Duration) {
	t0 := time.Now()
	for time.Since(t0) < d {
	}
}

// timerLatency — timer_latency (Go: BenchmarkParallelTimerLatency, simplified).
//
// Go's bench: one goroutine arms P-1 AfterFunc(1ms) timers on its own P and
// spins until all have fired; each callback spins too until all have fired,
// so the timers must be run by the other, idle Ps (golang.org/issue/38860).
// Here, per round: k = P-1 armer goroutines are spawned; each does
// `expected := time.Now().Add(1ms); time.AfterFunc(1ms, cb)` and then spins
// (busy, no blocking) until all k callbacks of the round have run, or 1 s has
// passed (spin_timeouts counts those; the round then still waits for them).
// So the timers sit in the heaps of P-1 busy Ps while the benchmark
// goroutine is parked on a WaitGroup, leaving one P idle to run them. The
// callback records late = max(0, time.Since(expected)) and does wg.Done();
// callbacks do not spin (the simplification). Between rounds the benchmark
// goroutine spins 1 ms (Go's doWork(1ms)) so idle Ps go back to sleep. Go's
// warmupScheduler and the 30 ms sysmon deep-sleep spin are left out (the
// harness's warm-up run starts the threads).
// At P = 1 there is no P to spare: k = 1 and the one armer arms its timer and
// returns without spinning, so the number is plain 1 ms timer lateness.
// One op = one timer (armed, fired, lateness recorded); ns_per_op is about
// 2 ms (delay + gap) and the metrics are extra.avg_late_ns and
// extra.max_late_ns over all timers of the run.
// Ops: 200 rounds normal, 40 quick; ops = rounds × k.
func timerLatency(b *B) {
	rounds := b.Size(200, 40)
	k := b.Procs - 1
	spin := true
	if k < 1 {
		k, spin = 1, false
	}
	type stat struct {
		sum   int64
		max   int64
		count int64
		_     [5]int64 // cache-line padding, as in Go's bench
	}
	stats := make([]stat, k)
	var fired atomic.Int32
	var spinTimeouts atomic.Int64
	garbage := armGarbage(b)

	b.Start()
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		wg.Add(2 * k) // k armers + k callbacks
		fired.Store(0)
		for j := 0; j < k; j++ {
			go func(j int) {
				defer wg.Done()
				expected := time.Now().Add(latencyDelay)
				time.AfterFunc(latencyDelay, func() {
					late := time.Since(expected).Nanoseconds()
					if late < 0 {
						late = 0
					}
					s := &stats[j]
					s.count++
					s.sum += late
					if late > s.max {
						s.max = late
					}
					fired.Add(1)
					wg.Done()
				})
				if !spin {
					return
				}
				t0 := time.Now()
				for fired.Load() < int32(k) {
					if time.Since(t0) > latencySpinCap {
						spinTimeouts.Add(1)
						break
					}
				}
			}(j)
		}
		wg.Wait()
		spinFor(latencyGap)
	}
	b.Stop()
	stopGarbage(garbage)

	var sum, count, maxLate int64
	for _, s := range stats {
		sum += s.sum
		count += s.count
		maxLate = max(maxLate, s.max)
	}
	b.SetOps(rounds * k)
	b.Extra("avg_late_ns", round2(float64(sum)/float64(count)))
	b.Extra("max_late_ns", maxLate)
	b.Extra("rounds", rounds)
	b.Extra("timers_per_round", k)
	b.Extra("spin_timeouts", spinTimeouts.Load())
}

// sleepFan — sleep_fan.
//
// G goroutines, spawned and parked before the clock starts; each does S times
// `time.Sleep(1ms)` in a row. Measured: from release until all G have
// returned. One op = one Sleep(1ms). The ideal wall time is S × 1 ms;
// extra.ideal_ns is that, extra.overhead_ratio = wall_ns / ideal_ns.
// Ops: 10,000 × 100 = 1,000,000 normal (ideal 100 ms), 1,000 × 10 = 10,000
// quick (ideal 10 ms).
func sleepFan(b *B) {
	gs := b.Size(10_000, 1_000)
	sleeps := b.Size(100, 10)
	garbage := armGarbage(b)
	g := newGang(gs, func(int) {
		for i := 0; i < sleeps; i++ {
			time.Sleep(time.Millisecond)
		}
	})
	b.Start()
	g.release()
	g.wait()
	b.Stop()
	stopGarbage(garbage)

	ideal := int64(sleeps) * time.Millisecond.Nanoseconds()
	b.SetOps(gs * sleeps)
	b.Extra("goroutines", gs)
	b.Extra("sleeps_per_goroutine", sleeps)
	b.Extra("ideal_ns", ideal)
	b.Extra("overhead_ratio", round2(float64(b.wallNs)/float64(ideal)))
}
