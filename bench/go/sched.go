package main

// The sched group of BENCHMARKS.md: goroutine creation, yielding, and
// token passing over rendezvous channels. Each workload's header comment says
// exactly what one op is and how many ops one run does (normal / -quick).

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

func init() {
	register(
		Workload{"spawn_chain", "sched", "one goroutine spawn+run in a chain (each goroutine spawns the next)", spawnChain},
		Workload{"spawn_many", "sched", "one goroutine spawned by a single spawner that decrements a shared counter", spawnMany},
		Workload{"yield_many", "sched", "one runtime.Gosched() by one of 200 goroutines", yieldMany},
		Workload{"ping_pong", "sched", "one round trip (two rendezvous hand-offs) between two goroutines", pingPong},
	)
	for _, n := range []int{10, 100, 1000, 10000} {
		register(
			Workload{fmt.Sprintf("ring/n=%d", n), "sched", fmt.Sprintf("one token hop in a ring of %d goroutines over unbuffered channels", n), ring(n, 0)},
			Workload{fmt.Sprintf("ring_buf/n=%d", n), "sched", fmt.Sprintf("one token hop in a ring of %d goroutines over channels of capacity 1", n), ring(n, 1)},
		)
	}
}

// spawnChain — spawn_chain (Go: BenchmarkCreateGoroutines, one chain).
//
// One op = one goroutine created and run: goroutine k does `go f(k-1)` and
// returns; the last one (k == 0) closes done. The measured region is from the
// first `go` to done being closed, so it covers every spawn in the chain.
// Ops: 100,000 normal, 20,000 quick (exactly that many goroutines).
func spawnChain(b *B) {
	n := b.Size(100_000, 20_000)
	done := make(chan struct{})
	var f func(k int)
	f = func(k int) {
		if k == 0 {
			close(done)
			return
		}
		go f(k - 1)
	}
	b.Start()
	go f(n - 1) // goroutines f(n-1) .. f(0): n in all
	<-done
	b.Stop()
	b.SetOps(n)
}

// spawnMany — spawn_many (Go: BenchmarkCreateGoroutinesSingle; tokio:
// spawn_many_local).
//
// One op = one goroutine spawned by a single spawner (the benchmark's own
// goroutine, in a plain counted loop) plus that goroutine running
// `left.Add(-1)`; the goroutine that brings the counter to zero closes done.
// Measured: from the first spawn until done is closed.
// Ops: 100,000 normal, 20,000 quick.
func spawnMany(b *B) {
	n := b.Size(100_000, 20_000)
	var left atomic.Int64
	left.Store(int64(n))
	done := make(chan struct{})
	b.Start()
	for i := 0; i < n; i++ {
		go func() {
			if left.Add(-1) == 0 {
				close(done)
			}
		}()
	}
	<-done
	b.Stop()
	b.SetOps(n)
}

// yieldTasks is the number of goroutines in yield_many (tokio's TASKS).
const yieldTasks = 200

// yieldMany — yield_many (tokio: yield_many; Go: Gosched loop).
//
// One op = one runtime.Gosched(). 200 goroutines each call Gosched Y times
// (Y = 1000 normal, 100 quick) and then wg.Done(). As in tokio's bench, the
// 200 spawns are inside the measured region (200 spawns vs 200,000 yields).
// Ops: 200 × 1000 = 200,000 normal, 200 × 100 = 20,000 quick.
func yieldMany(b *B) {
	y := b.Size(1000, 100)
	var wg sync.WaitGroup
	wg.Add(yieldTasks)
	b.Start()
	for t := 0; t < yieldTasks; t++ {
		go func() {
			defer wg.Done()
			for i := 0; i < y; i++ {
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	b.Stop()
	b.SetOps(yieldTasks * y)
	b.Extra("tasks", yieldTasks)
}

// pingPong — ping_pong (Go: ChanSync shape, with two channels).
//
// Two goroutines, two unbuffered channels ping and pong. The pinger does R
// times `ping <- i; <-pong`; the ponger does R times `v := <-ping; pong <- v`.
// One op = one round trip (two rendezvous hand-offs). Both goroutines are
// spawned and parked before the clock starts; the measured region is from
// releasing them until both have returned.
// Ops: 500,000 normal, 50,000 quick.
func pingPong(b *B) {
	r := b.Size(500_000, 50_000)
	ping, pong := make(chan int), make(chan int)
	g := newGang(2, func(who int) {
		if who == 0 {
			for i := 0; i < r; i++ {
				ping <- i
				<-pong
			}
		} else {
			for i := 0; i < r; i++ {
				v := <-ping
				pong <- v
			}
		}
	})
	b.Start()
	g.release()
	g.wait()
	b.Stop()
	b.SetOps(r)
}

// ring returns ring/n=N (capacity 0, Go: GoroutineRing) or ring_buf/n=N
// (capacity 1, GoroutineRingBuf).
//
// n goroutines; goroutine i receives from chans[i] and sends to
// chans[(i+1)%n]. One token (an int counting the hops left) goes around:
// the benchmark goroutine sends H-1 into chans[0]; a goroutine that receives
// v > 0 sends v-1 on; the one that receives 0 closes done. That is exactly H
// channel transfers. One op = one hop (one channel transfer and the wake-up of
// the next goroutine). The n goroutines are spawned and running (about to
// block on their first receive) before the clock starts; afterwards all
// channels are closed and the goroutines' `range` loops end.
// Ops: H = 1,000,000 normal, 100,000 quick, for every n.
func ring(n, capacity int) func(b *B) {
	return func(b *B) {
		hops := b.Size(1_000_000, 100_000)
		chans := make([]chan int, n)
		for i := range chans {
			chans[i] = make(chan int, capacity)
		}
		done := make(chan struct{})
		var ready, exited sync.WaitGroup
		ready.Add(n)
		exited.Add(n)
		for i := 0; i < n; i++ {
			in, out := chans[i], chans[(i+1)%n]
			go func() {
				defer exited.Done()
				ready.Done()
				for v := range in {
					if v == 0 {
						close(done)
						continue
					}
					out <- v - 1
				}
			}()
		}
		ready.Wait()

		b.Start()
		chans[0] <- hops - 1
		<-done
		b.Stop()

		for _, c := range chans {
			close(c)
		}
		exited.Wait()
		b.SetOps(hops)
		b.Extra("n", n)
		b.Extra("cap", capacity)
	}
}
