package main

// The pool group of goro-bench/README.md (seed 003, the victim cache), after Go's
// own benchmarks in $GOROOT/src/sync/pool_test.go (BenchmarkPool,
// PoolOverflow, PoolStarvation, PoolSTW, PoolExpensiveNew). Each workload's
// header comment says exactly what one op is and how many ops one run does
// (normal / -quick); goro-bench's workloads/pool.rs mirrors them. P below is
// -procs.
//
// One op is what one pb.Next() (or b.N) iteration of Go's benchmark does, so
// ns/op and new_per_op read like Go's own numbers: pool one Put + one Get;
// pool_overflow 100 Puts + 100 Gets; pool_starvation 67 Puts + 100 Gets;
// pool_cycle/n=N N Puts + one GC; pool_expensive_new 100 Gets + 100 Puts.
// The pooled value is any(1) / any(42), which does not allocate. Parallel
// workloads (Go's RunParallel) split their ops over P goroutines in whole
// batches (perWorker in chan.go); `ops` reports what was actually done.

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

func init() {
	register(
		Workload{"pool", "pool", "one Put then one Get (P goroutines)", poolPutGet},
		Workload{"pool_overflow", "pool", "100 Puts then 100 Gets (P goroutines)", poolOverflow},
		Workload{"pool_starvation", "pool", "67 Puts then 100 Gets, so Gets steal and miss (P goroutines)", poolStarvation},
	)
	for _, n := range poolCycleNs {
		register(Workload{fmt.Sprintf("pool_cycle/n=%d", n), "pool",
			fmt.Sprintf("%d Puts then one runtime.GC() (one goroutine); extra p50_ns, p95_ns: its STW pause", n),
			poolCycle(n)})
	}
	register(Workload{"pool_expensive_new", "pool",
		"100 Gets then 100 Puts, New sleeps 1 ms, a runtime.GC() every 10 ops (P goroutines); extra new_per_op, cycles_per_op",
		poolExpensiveNew})
}

const (
	// poolBatch is the 100 of PoolOverflow, PoolStarvation (Gets) and
	// PoolExpensiveNew.
	poolBatch = 100
	// poolStarved is PoolStarvation's countStarved: 100 - int(100*0.33).
	poolStarved = 67
	// poolCycleEvery: pool_expensive_new forces one cycle per this many ops
	// (all goroutines together).
	poolCycleEvery = 10
	// poolNewCost is how long pool_expensive_new's New takes.
	poolNewCost = time.Millisecond
)

// poolCycleNs are pool_cycle's pooled-value counts: PoolSTW's 100,000, and
// 1,000 beside it to show whether the cycle's cost depends on how many
// values are pooled.
var poolCycleNs = []int{1_000, 100_000}

// poolSink keeps Gets from being optimised away.
var poolSink atomic.Value

// poolParallel parks P goroutines that each run round K times against one
// pool, times them from release to the last return, and reports ops.
func poolParallel(b *B, k, ops int, round func(p *sync.Pool) any) {
	var p sync.Pool
	g := newGang(b.Procs, func(int) {
		var last any
		for r := 0; r < k; r++ {
			last = round(&p)
		}
		if last == nil {
			poolSink.Store(0)
		}
	})
	b.Start()
	g.release()
	g.wait()
	b.Stop()
	b.SetOps(ops)
	b.Extra("goroutines", b.Procs)
}

// poolPutGet — pool (Go: BenchmarkPool).
//
// P goroutines sharing one sync.Pool (no New); each does K times: Put(1),
// then Get(). One op = one Put plus one Get. K = total/P.
// Ops: 10,000,000 normal, 1,000,000 quick (rounded down to a multiple of P).
func poolPutGet(b *B) {
	k, ops := perWorker(b.Size(10_000_000, 1_000_000), b.Procs, 1)
	poolParallel(b, k, ops, func(p *sync.Pool) any {
		p.Put(1)
		return p.Get()
	})
}

// poolOverflow — pool_overflow (Go: BenchmarkPoolOverflow).
//
// P goroutines sharing one sync.Pool; each does K rounds of: 100 × Put(1),
// then 100 × Get(). One op = one round (100 Puts + 100 Gets, Go's op).
// K = total/P.
// Ops: 100,000 normal, 10,000 quick (rounded down to a multiple of P).
func poolOverflow(b *B) {
	k, ops := perWorker(b.Size(100_000, 10_000), b.Procs, 1)
	poolParallel(b, k, ops, func(p *sync.Pool) any {
		for i := 0; i < poolBatch; i++ {
			p.Put(1)
		}
		var v any
		for i := 0; i < poolBatch; i++ {
			v = p.Get()
		}
		return v
	})
	b.Extra("batch", poolBatch)
}

// poolStarvation — pool_starvation (Go: BenchmarkPoolStarvation).
//
// P goroutines sharing one sync.Pool; each does K rounds of: 67 × Put(1),
// then 100 × Get(); a third of the Gets find the own P's storage empty and
// steal from other Ps or miss (nil, no New). One op = one round (67 Puts +
// 100 Gets, Go's op). K = total/P.
// Ops: 100,000 normal, 10,000 quick (rounded down to a multiple of P).
func poolStarvation(b *B) {
	k, ops := perWorker(b.Size(100_000, 10_000), b.Procs, 1)
	poolParallel(b, k, ops, func(p *sync.Pool) any {
		for i := 0; i < poolStarved; i++ {
			p.Put(1)
		}
		var v any
		for i := 0; i < poolBatch; i++ {
			v = p.Get()
		}
		return v
	})
	b.Extra("puts", poolStarved)
	b.Extra("gets", poolBatch)
}

// pct is PoolSTW's quantile: sorted[len*q/100].
func pct(sorted []uint64, q int) uint64 {
	return sorted[min(len(sorted)*q/100, len(sorted)-1)]
}

// poolCycle — pool_cycle/n=N (Go: BenchmarkPoolSTW, with N values instead of
// its fixed 100,000).
//
// One goroutine, one sync.Pool kept across ops, the collector off
// (SetGCPercent(-1), as PoolSTW). K times: N × Put(42), then runtime.GC()
// (the forced cycle; goro: goro::sync::pool_cycle()), its wall time recorded.
// Each GC's pool cleanup moves the N values just put to the victim cache and
// drops the previous op's N. One op = N Puts plus one cycle. Extras: p50_ns,
// p95_ns = the cycle's cost, as PoolSTW reports it: the stop-the-world pause
// of each GC (MemStats.PauseNs, read after the clock for the K GCs of the
// region; pool cleanup runs in that pause), sorted[len*q/100]. goro's cycle
// stops nothing; its p50/p95 are the wall time of the pool_cycle() call.
// cycle_wall_p50_ns is the median wall time of the call on both sides (here
// runtime.GC(), the whole collection).
// Ops: 200 normal, 20 quick, for every N.
func poolCycle(n int) func(b *B) {
	return func(b *B) {
		k := b.Size(200, 20) // <= 256: PauseNs keeps the last 256 pauses
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		var p sync.Pool
		var item any = 42
		walls := make([]uint64, 0, k)
		b.Start()
		for r := 0; r < k; r++ {
			for i := 0; i < n; i++ {
				p.Put(item)
			}
			t := time.Now()
			runtime.GC()
			walls = append(walls, uint64(time.Since(t).Nanoseconds()))
		}
		b.Stop()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		gcs := min(int(b.gcCycles), k, len(ms.PauseNs))
		pauses := make([]uint64, 0, gcs)
		for i := 0; i < gcs; i++ {
			pauses = append(pauses, ms.PauseNs[(int(ms.NumGC)-1-i+len(ms.PauseNs))%len(ms.PauseNs)])
		}
		slices.Sort(pauses)
		slices.Sort(walls)
		b.SetOps(k)
		b.Extra("n", n)
		if len(pauses) > 0 {
			b.Extra("p50_ns", pct(pauses, 50))
			b.Extra("p95_ns", pct(pauses, 95))
		}
		b.Extra("cycle_wall_p50_ns", pct(walls, 50))
		runtime.KeepAlive(&p)
	}
}

// poolExpensiveNew — pool_expensive_new (Go: BenchmarkPoolExpensiveNew).
//
// One sync.Pool whose New sleeps 1 ms (time.Sleep) and counts its calls.
// P goroutines; before the clock each fills the pool with its 100 values
// (100 Gets then 100 Puts while New is still free and uncounted: the steady
// state Go's long runs reach, without the 100 ms first fill in every run).
// Measured, with the collector off (SetGCPercent(-1)): each goroutine does K
// rounds of 100 × Get() into its own array, then 100 × Put() back; after
// each round it adds one to a shared op count, and the goroutine that brings
// it to a multiple of 10 forces a cycle with runtime.GC() (goro:
// goro::sync::pool_cycle()), so cycles come at a steady rate of one per 10
// ops. (Go's own benchmark lets the GC run on its own, paced by a 32 KiB
// allocation per Get and an 8 MiB ballast; goro has no GC, so both sides
// force the cycle instead.) One op = one round (100 Gets + 100 Puts, Go's
// op). K = total/P. Extras: new_per_op (Go: New/op) and cycles_per_op (GCs
// in the region per op, Go: GCs/op). At P >= 2 two runtime.GC() calls that
// overlap make one GC, so cycles_per_op can be below 0.1 here; goro's
// pool_cycle() calls never merge. Also at P >= 2, a goroutine blocked in
// runtime.GC() (a whole collection) can sit through the next GC another
// goroutine forces, and its 100 values go from victim to dropped: the Go
// column's new_per_op is not 0 there.
// Ops: 400 normal, 60 quick (rounded down to a multiple of P).
func poolExpensiveNew(b *B) {
	k, ops := perWorker(b.Size(400, 60), b.Procs, 1)
	var armed atomic.Bool
	var nNew, done atomic.Uint64
	p := &sync.Pool{New: func() any {
		if armed.Load() {
			nNew.Add(1)
			time.Sleep(poolNewCost)
		}
		return 42
	}}
	var filled sync.WaitGroup
	filled.Add(b.Procs)
	start := make(chan struct{})
	g := newGang(b.Procs, func(int) {
		items := make([]any, poolBatch)
		for i := range items {
			items[i] = p.Get()
		}
		for i, v := range items {
			p.Put(v)
			items[i] = nil
		}
		filled.Done()
		<-start
		for r := 0; r < k; r++ {
			for i := range items {
				items[i] = p.Get()
			}
			for i, v := range items {
				p.Put(v)
				items[i] = nil
			}
			if done.Add(1)%poolCycleEvery == 0 {
				runtime.GC()
			}
		}
	})
	g.release()
	filled.Wait()
	old := debug.SetGCPercent(-1)
	armed.Store(true)
	b.Start()
	close(start)
	g.wait()
	b.Stop()
	armed.Store(false)
	debug.SetGCPercent(old)
	b.SetOps(ops)
	b.Extra("goroutines", b.Procs)
	b.Extra("new_per_op", round2(float64(nNew.Load())/float64(ops)))
	b.Extra("cycles_per_op", round2(float64(b.gcCycles)/float64(ops)))
}
