package main

// The sync group of goro-bench/README.md, after Go's sync/mutex_test.go
// benchmarks (sync.Pool has its own group, pool.go). Each workload's header
// comment says exactly what one op is and how many ops one run does
// (normal / -quick). P below is -procs.

import (
	"fmt"
	"sync"
)

func init() {
	register(
		Workload{"mutex_contended", "sync", "one lock, increment, unlock of one mutex shared by 4*P goroutines (Go's BenchmarkMutex)", mutexContended},
	)
}

// mutexContended — mutex_contended (Go: BenchmarkMutex of sync/mutex_test.go).
//
// One sync.Mutex guarding a uint64, shared by W = 4*P goroutines (tasksPerP;
// BenchmarkMutex runs P goroutines under RunParallel, MutexSlack 10*P: here
// 4*P, as in fan_in), parked before the clock. Each does K times: Lock,
// increment the guarded value, Unlock. Nothing is done outside the lock
// (BenchmarkMutex's shape, not BenchmarkMutexWork's), so this is the lock at
// its most contended. K = total/W. Checked: the value is W*K at the end.
// One op = one Lock + increment + Unlock.
// Ops: 2,000,000 normal, 200,000 quick (rounded down to a multiple of W).
func mutexContended(b *B) {
	w := tasksPerP * b.Procs
	k, ops := perWorker(b.Size(2_000_000, 200_000), w, 1)
	var mu sync.Mutex
	var n uint64
	g := newGang(w, func(int) {
		for i := 0; i < k; i++ {
			mu.Lock()
			n++
			mu.Unlock()
		}
	})
	b.Start()
	g.release()
	g.wait()
	b.Stop()
	mu.Lock()
	got := n
	mu.Unlock()
	if got != uint64(ops) {
		panic(fmt.Sprintf("mutex_contended: value %d, want %d", got, ops))
	}
	b.SetOps(ops)
	b.Extra("goroutines", w)
}
