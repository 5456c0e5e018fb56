package main

// The sched group of goro-bench/README.md: goroutine creation, yielding, and
// token passing over rendezvous channels. Each workload's header comment says
// exactly what one op is and how many ops one run does (normal / -quick).

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

func init() {
	register(
		Workload{"spawn_chain", "sched", "one goroutine spawn+run in a chain (each goroutine spawns the next)", spawnChain},
		Workload{"spawn_many", "sched", "one goroutine spawned by a single spawner that decrements a shared counter", spawnMany},
		Workload{"skynet", "sched", "one goroutine of a 10-ary tree of 10^6 leaves (10^5 quick), each inner goroutine summing its children's numbers", skynetRun},
		Workload{"yield_many", "sched", "one runtime.Gosched() by one of 200 goroutines", yieldMany},
		Workload{"ping_pong", "sched", "one round trip (two rendezvous hand-offs) between two goroutines", pingPong},
	)
	for _, n := range []int{10, 100, 1000, 10000} {
		register(
			Workload{fmt.Sprintf("ring/n=%d", n), "sched", fmt.Sprintf("one token hop in a ring of %d goroutines over unbuffered channels", n), ring(n, 0)},
			Workload{fmt.Sprintf("ring_buf/n=%d", n), "sched", fmt.Sprintf("one token hop in a ring of %d goroutines over channels of capacity 1", n), ring(n, 1)},
		)
	}
	for _, p := range []int{16, 64, 128} {
		name := fmt.Sprintf("burst/procs=%d", p)
		register(Workload{name, "sched", "one short goroutine (~0.5 µs of work) in bursts of 1000 separated by 500 µs idle gaps", burst})
		fixProcs(name, p)
	}
	register(
		Workload{"idle_cpu", "sched", "one millisecond of an idle runtime holding 10,000 parked goroutines (cpu/op = CPU ns burnt per idle ms)", idleCPU},
		Workload{"oversub/ping_pong", "sched", "one ping_pong round trip while a second copy of the process runs ping_pong", oversubPingPong},
		Workload{"oversub/ring", "sched", fmt.Sprintf("one token hop in a ring of %d (unbuffered) while a second copy of the process runs ring/n=%d", oversubRing, oversubRing), oversubRingRun},
	)
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

// skynetDiv is skynet's fan-out: every inner goroutine starts this many
// children.
const skynetDiv = 10

// skynetRun — skynet (https://github.com/atemerev/skynet), the original's
// program.
//
// The benchmark goroutine starts the root, `go skynet(c, 0, leaves, 10)`,
// and receives its result from the unbuffered c. A goroutine of size 1 (a
// leaf) sends its num; any other makes an unbuffered channel rc, starts 10
// children over the 10 tenths of its range, receives 10 values from rc, and
// sends their sum on c. The root's sum is checked: 0 + 1 + ... + leaves-1
// (499999500000 for 10^6 leaves). One op = one goroutine started, run and
// ended (ns per goroutine): leaves + leaves/10 + ... + 1 of them. Measured
// from the root's `go` until its sum is received.
// Ops: 1,111,111 (10^6 leaves, 6 levels below the root) normal, 111,111
// (10^5 leaves, 5 levels) quick. Extras: leaves, div.
func skynetRun(b *B) {
	leaves := b.Size(1_000_000, 100_000)
	tasks := 0
	for n := leaves; n >= 1; n /= skynetDiv {
		tasks += n
	}
	c := make(chan int)
	b.Start()
	go skynet(c, 0, leaves, skynetDiv)
	sum := <-c
	b.Stop()
	if want := leaves * (leaves - 1) / 2; sum != want {
		panic(fmt.Sprintf("skynet: sum %d, want %d", sum, want))
	}
	b.SetOps(tasks)
	b.Extra("leaves", leaves)
	b.Extra("div", skynetDiv)
}

// skynet is one goroutine of the skynet tree: the leaves num..num+size-1.
func skynet(c chan int, num, size, div int) {
	if size == 1 {
		c <- num
		return
	}
	rc := make(chan int)
	var sum int
	for i := 0; i < div; i++ {
		subNum := num + i*(size/div)
		go skynet(rc, subNum, size/div, div)
	}
	for i := 0; i < div; i++ {
		sum += <-rc
	}
	c <- sum
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
func pingPong(b *B) { pingPongShape(b, "") }

// oversubPingPong — oversub/ping_pong (seed 000).
//
// ping_pong (same shape and counts) while a second copy of this process runs
// ping_pong at the same procs in a loop (load.go; started, warm and looping
// before the setup, stopped right after the measured region). The pinger
// takes time.Now() before each `ping <- i` and records time.Since after the
// `<-pong`, so each round trip's latency goes into a histogram (hist.go, the
// buckets of goro-bench's); extras p50_ns, p99_ns, p999_ns.
// Ops: 500,000 normal, 50,000 quick.
func oversubPingPong(b *B) { pingPongShape(b, "ping_pong") }

// pingPongShape is ping_pong; with load != "", oversub/ping_pong running
// load in the second copy.
func pingPongShape(b *B, load string) {
	var child *loadChild
	if load != "" {
		child = startLoad(b, load)
	}
	rec := child != nil
	h := new(Histogram)
	r := b.Size(500_000, 50_000)
	ping, pong := make(chan int), make(chan int)
	g := newGang(2, func(who int) {
		if who == 0 {
			if rec {
				for i := 0; i < r; i++ {
					t := time.Now()
					ping <- i
					<-pong
					h.RecordSince(t)
				}
				return
			}
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
	if child != nil {
		child.stop()
		withQuantiles(b, h)
	}
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

// oversubRing is the ring size of oversub/ring.
const oversubRing = 100

// hopTok is oversub/ring's token: hops left and when it was sent.
type hopTok struct {
	left int
	sent time.Time
}

// oversubRingRun — oversub/ring (seed 000).
//
// ring/n=100 over unbuffered channels (the ring shape above) while a second
// copy of this process runs ring/n=100 at the same procs in a loop (load.go;
// started before the setup, stopped right after the measured region, before
// the teardown). The token carries the time it was sent (time.Now() just
// before each send); every receiver records time.Since(sent) for the hop,
// including the last one, into a histogram (hist.go): one record per hop.
// One op = one hop; extras n, p50_ns, p99_ns, p999_ns.
// Ops: 1,000,000 normal, 100,000 quick.
func oversubRingRun(b *B) {
	child := startLoad(b, fmt.Sprintf("ring/n=%d", oversubRing))
	n := oversubRing
	hops := b.Size(1_000_000, 100_000)
	h := new(Histogram)
	chans := make([]chan hopTok, n)
	for i := range chans {
		chans[i] = make(chan hopTok)
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
			for t := range in {
				h.RecordSince(t.sent)
				if t.left == 0 {
					close(done)
					continue
				}
				out <- hopTok{t.left - 1, time.Now()}
			}
		}()
	}
	ready.Wait()

	b.Start()
	chans[0] <- hopTok{hops - 1, time.Now()}
	<-done
	b.Stop()
	child.stop()

	for _, c := range chans {
		close(c)
	}
	exited.Wait()
	b.SetOps(hops)
	b.Extra("n", n)
	withQuantiles(b, h)
}

// Burst parameters (goro-bench: BURST_TASKS, BURST_GAP).
const (
	burstTasks = 1000
	burstGap   = 500 * time.Microsecond
)

// burstSink keeps shortWork's result observable (almost never written).
var burstSink atomic.Uint64

// shortWork is about half a microsecond of dependent arithmetic (500
// multiply-adds, goro-bench's short_work) that the compiler cannot remove.
func shortWork(seed uint64) {
	x := seed
	for i := uint64(0); i < 500; i++ {
		x = x*6364136223846793005 + i
	}
	if x == 0 {
		burstSink.Add(1)
	}
}

// burst — burst/procs=16, burst/procs=64, burst/procs=128 (seed 002).
//
// Always runs at GOMAXPROCS 16, 64 or 128 (the name says which; main overrides
// -procs via fixProcs, as goro-bench's fixed_procs does), far above the
// cores. B bursts; in each, the benchmark goroutine spawns 1000 short
// goroutines (shortWork, ~0.5 µs each), waits for all of them on a
// WaitGroup, then idles 500 µs, so every P runs out of work, its M spins
// looking for some and parks. One op = one short goroutine; the gaps are
// inside the measured region (0.5 ns/op per µs of gap).
// The gap: goro-bench waits for a thread of its blocking pool doing
// std::thread::sleep(500 µs), the benchmark task parked meanwhile. Go has no
// such pool in reach, so the benchmark goroutine calls time.Sleep(500 µs):
// it parks on a runtime timer, and the P whose heap holds the timer wakes
// (in netpoll with a timeout, or sysmon) to run it. Either way every P is
// idle for the gap and the next burst starts from one woken goroutine; the
// wake-up source differs (a runtime timer here, a finished OS sleep there).
// Go also rounds the wait of an idle runtime up to whole milliseconds (the
// netpoller's epoll_pwait takes a timeout in ms), so a 500 µs Sleep with
// every P idle lasts about 1.1 ms, where the OS sleep lasts about 0.55 ms:
// gap_avg_us (Go only) is the mean measured gap, to subtract when comparing
// (each µs of gap is 1 ns/op).
// goro's find_runnable_share / steal_share and work-per-search extras
// (inspected_per_find, failed_steals_per_find, finds_per_op,
// find_cpu_share) have no Go counterpart.
// Extras: tasks_per_burst, gap_us (nominal), gap_avg_us.
// Ops: B × 1000 with B = 200 normal (200,000), 40 quick (40,000).
func burst(b *B) {
	bursts := b.Size(200, 40)
	var slept time.Duration
	b.Start()
	for k := 0; k < bursts; k++ {
		var wg sync.WaitGroup
		wg.Add(burstTasks)
		for t := 0; t < burstTasks; t++ {
			seed := uint64(k) ^ uint64(t)
			go func() {
				shortWork(seed)
				wg.Done()
			}()
		}
		wg.Wait()
		t0 := time.Now()
		time.Sleep(burstGap)
		slept += time.Since(t0)
	}
	b.Stop()
	b.SetOps(bursts * burstTasks)
	b.Extra("tasks_per_burst", burstTasks)
	b.Extra("gap_us", burstGap.Microseconds())
	b.Extra("gap_avg_us", round2(float64(slept.Nanoseconds())/1e3/float64(bursts)))
}

// idleTasks is the number of goroutines parked in idle_cpu.
const idleTasks = 10_000

// idleCPU — idle_cpu (seed 000).
//
// 10,000 goroutines, each with its own unbuffered channel and its own
// time.NewTimer(1h), parked in `select { case <-ch: case <-timer.C: }` (so
// 10,000 timers an hour away are armed, spread over the Ps), then
// timer.Stop(). After a settling pause of 50 ms, the benchmark goroutine
// sleeps through the idle period (2 s normal, 0.5 s quick) so the runtime has
// nothing to run. goro-bench waits on a blocking-pool thread's
// std::thread::sleep for both pauses; here the benchmark goroutine calls
// time.Sleep (one more runtime timer, firing once at the end). One op = one
// idle millisecond: cpu_ns_per_op is the CPU burnt per idle ms (sysmon, the
// scavenger, timer and netpoll wake-ups); extras cpu_ms_per_s and
// wakeups_per_s (voluntary context switches of the process per second ≈
// thread wakeups, getrusage Nvcsw), tasks, timers. Teardown closes every
// channel and waits for the 10,000 goroutines to return.
// Ops: 2,000 normal, 500 quick.
func idleCPU(b *B) {
	idleMs := b.Size(2_000, 500)
	chans := make([]chan struct{}, idleTasks)
	var ready, exited sync.WaitGroup
	ready.Add(idleTasks)
	exited.Add(idleTasks)
	for i := range chans {
		ch := make(chan struct{})
		chans[i] = ch
		go func() {
			defer exited.Done()
			timer := time.NewTimer(time.Hour)
			ready.Done()
			select {
			case <-ch:
			case <-timer.C:
			}
			timer.Stop()
		}()
	}
	ready.Wait()
	time.Sleep(50 * time.Millisecond)

	b.Start()
	time.Sleep(time.Duration(idleMs) * time.Millisecond)
	b.Stop()

	for _, ch := range chans {
		close(ch)
	}
	exited.Wait()
	secs := float64(b.wallNs) / 1e9
	b.SetOps(idleMs)
	b.Extra("tasks", idleTasks)
	b.Extra("timers", idleTasks)
	b.Extra("cpu_ms_per_s", round2(float64(b.cpuNs)/1e6/secs))
	b.Extra("wakeups_per_s", round2(float64(b.nvcsw)/secs))
}
