package main

// The memory group of goro-bench/README.md: what a runtime's goroutines cost
// in resident memory. The workload's header comment says exactly what one
// op is and how many ops one run does (normal / -quick).

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

func init() {
	register(
		Workload{"parked_tasks", "memory", "one goroutine spawned that parks on its own unbuffered channel (bytes_per_task: RSS growth per parked goroutine)", parkedTasks},
	)
}

// firstBytesPerTask is parkedTasks' figure from the first run in this
// process (the warm-up): see parkedTasks.
var firstBytesPerTask = -1.0

// parkedTasks — parked_tasks (goro-bench/src/workloads/memory.rs).
//
// N goroutines, each made as a Go programmer writes it: `ch := make(chan
// int)`, kept in a slice, and `go func() { started.Done(); if <-ch == 1 {
// done.Done() } }()`. One op = one goroutine spawned and parked; the clock
// runs from the first `go` until started.Wait() returns (each goroutine
// then parks at once: at the RSS read at most GOMAXPROCS-1 may still be on
// their way into the receive). Then every goroutine is released by `ch <-
// 1` on its channel and the run waits for all N to finish (done.Wait(): a
// lost value would hang the run).
// Ops: N = 1,000,000 normal, 100,000 quick.
//
// extra.bytes_per_task = (RSS with all N parked - RSS before the first
// `go`) / N, RSS from /proc/self/statm (resident pages * page size), as
// goro-bench reads it for goro and tokio. It counts everything the N
// goroutines hold: g, stack, closure, channel, sudog, the slice.
//
// Method, and its error. Before the baseline: runtime.GC() and
// debug.FreeOSMemory(), which give the heap's free pages (a previous run's
// stacks and channels) back to the OS, so that their reuse faults them in
// again and counts (the clock pays those faults too, as in a fresh
// process; goro-bench's malloc_trim(0) does the same for goro and tokio).
// What they cannot give back: the runtime never frees a g (a dead
// goroutine's descriptor stays on a free list for the next `go`), so a
// later run in the same process reuses N g's unseen and reads ~20% low
// (2,320 against 2,880 bytes on the 2-core VM, Go 1.26). The reported
// figure is therefore the first run's in this process, the warm-up's:
// goro-bench starts a fresh process for every measured run (`-runs 1`), so
// each sample is a fresh process's (with -runs N all N records repeat it).
// This run's own figure, g's reused, is extra.bytes_per_task_reused. The
// rest of the error: the page granularity (4 KiB / N: nothing), the <=
// GOMAXPROCS-1 goroutines not yet parked, and what the runtime does in the
// background meanwhile (a GC cycle frees nothing here, all of it is live;
// the scavenger may return a few free pages). Fresh processes read
// 2,880-2,886 on the 2-core VM.
func parkedTasks(b *B) {
	n := b.Size(1_000_000, 100_000)
	var started, done sync.WaitGroup
	started.Add(n)
	done.Add(n)
	runtime.GC()
	debug.FreeOSMemory()
	rss0 := rssBytes()
	chans := make([]chan int, n)
	b.Start()
	for i := range chans {
		ch := make(chan int)
		chans[i] = ch
		go func() {
			started.Done()
			if <-ch == 1 {
				done.Done()
			}
		}()
	}
	started.Wait()
	b.Stop()
	rss1 := rssBytes()
	for _, ch := range chans {
		ch <- 1
	}
	done.Wait()
	b.SetOps(n)
	b.Extra("tasks", n)
	if rss0 < 0 || rss1 < 0 {
		return // no /proc: no figure rather than a wrong one
	}
	per := round2(float64(rss1-rss0) / float64(n))
	if firstBytesPerTask < 0 {
		firstBytesPerTask = per
	}
	b.Extra("bytes_per_task", firstBytesPerTask)
	b.Extra("bytes_per_task_reused", per)
}

// rssBytes is the process's resident set in bytes: /proc/self/statm's
// second field (resident pages) times the page size; -1 where it cannot be
// read.
func rssBytes() int64 {
	s, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(s))
	if len(f) < 2 {
		return -1
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return -1
	}
	return pages * int64(os.Getpagesize())
}
