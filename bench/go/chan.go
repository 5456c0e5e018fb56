package main

// The chan group of goro-bench/README.md, after Go's runtime/chan_test.go
// benchmarks. Each workload's header comment says exactly what one op is and
// how many ops one run does (normal / -quick). P below is -procs.

import (
	"fmt"
	"sync/atomic"
)

func init() {
	register(
		Workload{"chan_uncontended", "chan", "one send+receive on a goroutine's own channel of capacity 100 (P goroutines)", chanUncontended},
		Workload{"chan_contended", "chan", "one send+receive on one channel of capacity 100*P shared by P goroutines", chanContended},
	)
	for _, c := range []int{0, 10, 100} {
		register(Workload{fmt.Sprintf("chan_prodcons/cap=%d", c), "chan",
			fmt.Sprintf("one message from P producers to P consumers over one channel of capacity %d", c), chanProdCons(c)})
	}
	for _, f := range []struct {
		name, collector string
		spawned         bool
	}{
		{"fan_in/main", "the benchmark goroutine (Go's main)", false},
		{"fan_in/spawned", "a spawned goroutine", true},
		{"fan_in/local", "the benchmark goroutine, as fan_in/main (Go has no main outside a P)", false},
	} {
		register(Workload{f.name, "chan",
			fmt.Sprintf("one uint64 received by one collector from 4*P senders over one channel of capacity %d; the collector is %s", fanInCap, f.collector),
			fanIn(f.spawned)})
	}
	register(
		Workload{"select_uncontended", "chan", "one 2-case select receive plus one send, on a goroutine's own two channels of capacity 1 (P goroutines)", selectUncontended},
		Workload{"select_contended", "chan", "one message through 2 shared unbuffered channels, P select-senders to P select-receivers", selectContended},
	)
}

// chanBatch is C in Go's ChanUncontended/ChanContended: sends per burst.
const chanBatch = 100

// tasksPerP is the goroutines per P of the rows where many goroutines
// contend for one thing (fan_in's senders here, mutex_contended's lockers
// in sync.go): several per P, as b.SetParallelism(4) makes RunParallel
// start 4 per P, so more are runnable than there are Ps (goro-bench's
// TASKS_PER_P).
const tasksPerP = 4

// fanInCap is the capacity of fan_in's one channel.
const fanInCap = 16

// perWorker splits total ops over workers in whole batches; it returns the
// batches per worker and the resulting total op count.
func perWorker(total, workers, batch int) (batches, ops int) {
	batches = total / (workers * batch)
	if batches < 1 {
		batches = 1
	}
	return batches, batches * workers * batch
}

// chanUncontended — chan_uncontended (Go: BenchmarkChanUncontended).
//
// P goroutines, each with its own `make(chan int, 100)`. Each does K rounds
// of: 100 sends, then 100 receives (never blocks). K = total/(P*100).
// One op = one send plus one receive. Goroutines are spawned and parked
// before the clock starts.
// Ops: 10,000,000 normal, 1,000,000 quick (rounded down to a multiple of P*100).
func chanUncontended(b *B) {
	k, ops := perWorker(b.Size(10_000_000, 1_000_000), b.Procs, chanBatch)
	g := newGang(b.Procs, func(int) {
		myc := make(chan int, chanBatch)
		for r := 0; r < k; r++ {
			for i := 0; i < chanBatch; i++ {
				myc <- 0
			}
			for i := 0; i < chanBatch; i++ {
				<-myc
			}
		}
	})
	b.Start()
	g.release()
	g.wait()
	b.Stop()
	b.SetOps(ops)
	b.Extra("goroutines", b.Procs)
	b.Extra("cap", chanBatch)
}

// chanContended — chan_contended (Go: BenchmarkChanContended).
//
// One `make(chan int, 100*P)` shared by P goroutines. Each does K rounds of:
// 100 sends, then 100 receives. The capacity covers every goroutine's burst,
// so no operation blocks; the cost is contention on the channel lock.
// K = total/(P*100). One op = one send plus one receive.
// Ops: 5,000,000 normal, 500,000 quick (rounded down to a multiple of P*100).
func chanContended(b *B) {
	k, ops := perWorker(b.Size(5_000_000, 500_000), b.Procs, chanBatch)
	myc := make(chan int, chanBatch*b.Procs)
	g := newGang(b.Procs, func(int) {
		for r := 0; r < k; r++ {
			for i := 0; i < chanBatch; i++ {
				myc <- 0
			}
			for i := 0; i < chanBatch; i++ {
				<-myc
			}
		}
	})
	b.Start()
	g.release()
	g.wait()
	b.Stop()
	b.SetOps(ops)
	b.Extra("goroutines", b.Procs)
	b.Extra("cap", chanBatch*b.Procs)
}

// prodConsBatch is CallsPerSched in Go's benchmarkChanProdCons.
const prodConsBatch = 1000

// chanProdCons returns chan_prodcons/cap=c (Go: BenchmarkChanProdCons0/10/100,
// localWork = 0).
//
// One `make(chan int, c)`; P producers and P consumers. A shared atomic
// counter holds the number of 1000-message batches left; a producer takes a
// batch (`left.Add(-1) >= 0`) and sends 1000 ones, until none are left, then
// sends one 0 (a stop sentinel) and returns. A consumer receives until it
// gets a 0. Every producer sends exactly one sentinel and every consumer
// stops at its first, so all 2P goroutines return. One op = one message
// (the P sentinels are not counted). All 2P goroutines are spawned and parked
// before the clock starts.
// Ops: 2,000,000 normal, 200,000 quick (multiples of 1000).
func chanProdCons(c int) func(b *B) {
	return func(b *B) {
		batches := b.Size(2_000_000, 200_000) / prodConsBatch
		myc := make(chan int, c)
		var left atomic.Int64
		left.Store(int64(batches))
		g := newGang(2*b.Procs, func(i int) {
			if i%2 == 0 { // producer
				for left.Add(-1) >= 0 {
					for j := 0; j < prodConsBatch; j++ {
						myc <- 1
					}
				}
				myc <- 0
				return
			}
			for { // consumer: ends at its sentinel; every message is one of the counted ones
				if <-myc == 0 {
					return
				}
			}
		})
		b.Start()
		g.release()
		g.wait()
		b.Stop()
		b.SetOps(batches * prodConsBatch)
		b.Extra("producers", b.Procs)
		b.Extra("consumers", b.Procs)
		b.Extra("cap", c)
	}
}

// fanIn returns fan_in/main and fan_in/local (spawned false: fanInBody in
// the benchmark goroutine, which is the main goroutine of this program; Go
// has no main outside a P, so fan_in/local runs the same) and
// fan_in/spawned (the whole of fanInBody in a goroutine the benchmark
// goroutine waits for, as goro-bench spawns the body as a task and waits
// for it).
func fanIn(spawned bool) func(b *B) {
	if !spawned {
		return fanInBody
	}
	return func(b *B) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			fanInBody(b)
		}()
		<-done
	}
}

// fanInBody — fan_in/main, fan_in/spawned, fan_in/local (the fan-in stage
// of a pipeline: results gathered from workers; Go's test suite has no
// benchmark of this shape, the nearest is BenchmarkChanProdCons with one
// consumer).
//
// W = 4*P senders (tasksPerP), parked before the clock, each sending the
// values 1..K (uint64) on ONE shared `make(chan uint64, 16)` to ONE
// collector, the goroutine running this function, which receives W*K
// values and sums them. K = total/W. The capacity is below W even at P=1,
// so the senders fill the channel and block, and the collector's receives
// wake them. Checked: the sum is W*K(K+1)/2.
// One op = one value received.
// Ops: 2,000,000 normal, 200,000 quick (rounded down to a multiple of W).
func fanInBody(b *B) {
	w := tasksPerP * b.Procs
	k, ops := perWorker(b.Size(2_000_000, 200_000), w, 1)
	ch := make(chan uint64, fanInCap)
	g := newGang(w, func(int) {
		for v := uint64(1); v <= uint64(k); v++ {
			ch <- v
		}
	})
	var sum uint64
	b.Start()
	g.release()
	for i := 0; i < ops; i++ {
		sum += <-ch
	}
	b.Stop()
	g.wait()
	if want := uint64(w) * (uint64(k) * uint64(k+1) / 2); sum != want {
		panic(fmt.Sprintf("fan_in: sum %d, want %d", sum, want))
	}
	b.SetOps(ops)
	b.Extra("senders", w)
	b.Extra("cap", fanInCap)
}

// selectUncontended — select_uncontended (Go: BenchmarkSelectUncontended).
//
// P goroutines, each with its own two channels c1, c2 of capacity 1; c1
// starts holding one value. Each does K iterations of
//
//	select { case <-c1: c2 <- 0; case <-c2: c1 <- 0 }
//
// so the value bounces between the two channels and nothing ever blocks.
// K = total/P. One op = one 2-case select that receives, plus one send.
// Ops: 5,000,000 normal, 500,000 quick (rounded down to a multiple of P).
func selectUncontended(b *B) {
	k, ops := perWorker(b.Size(5_000_000, 500_000), b.Procs, 1)
	g := newGang(b.Procs, func(int) {
		c1, c2 := make(chan int, 1), make(chan int, 1)
		c1 <- 0
		for i := 0; i < k; i++ {
			select {
			case <-c1:
				c2 <- 0
			case <-c2:
				c1 <- 0
			}
		}
	})
	b.Start()
	g.release()
	g.wait()
	b.Stop()
	b.SetOps(ops)
	b.Extra("goroutines", b.Procs)
}

// selectContended — select_contended (Go: BenchmarkSelectSyncContended,
// with 2 channels instead of 3 and counted partners instead of a done channel).
//
// Two unbuffered channels c1, c2 shared by everyone. P receivers each do K
// times `select { case <-c1: case <-c2: }`; P partners (one per receiver, as
// in Go's bench) each do K times `select { case c1 <- 0: case c2 <- 0: }`.
// Any partner can pair with any receiver; sends and receives total P*K each,
// so every goroutine finishes with no done channel. K = total/P.
// One op = one message (one rendezvous between a selecting sender and a
// selecting receiver). All 2P goroutines are spawned and parked before the
// clock starts.
// Ops: 500,000 normal, 50,000 quick (rounded down to a multiple of P).
func selectContended(b *B) {
	k, ops := perWorker(b.Size(500_000, 50_000), b.Procs, 1)
	c1, c2 := make(chan int), make(chan int)
	g := newGang(2*b.Procs, func(i int) {
		if i%2 == 0 { // partner: sender
			for j := 0; j < k; j++ {
				select {
				case c1 <- 0:
				case c2 <- 0:
				}
			}
			return
		}
		for j := 0; j < k; j++ { // receiver
			select {
			case <-c1:
			case <-c2:
			}
		}
	})
	b.Start()
	g.release()
	g.wait()
	b.Stop()
	b.SetOps(ops)
	b.Extra("senders", b.Procs)
	b.Extra("receivers", b.Procs)
}
