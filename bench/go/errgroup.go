package main

// errgroup_cancel of goro-bench's sync group (goro-bench/src/workloads/
// errgroup.rs, read side by side). golang.org/x/sync is not in this
// module (go.mod has no requirements, and the bench builds offline), so
// the group is a hand-rolled equivalent of errgroup.WithContext with the
// same mechanics: a sync.WaitGroup, a context.WithCancel cancelled by the
// first error (sync.Once), and Wait = wg.Wait, then cancel.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

func init() {
	register(
		Workload{"errgroup_cancel", "sync", "one errgroup.WithContext of 10,000 members parked on ctx.Done(), stopped by one failing member; extras p50_ns/p99_ns/max_ns from the failing member's return to Wait() returning", errgroupCancel},
	)
}

// errGroup is x/sync's errgroup.Group without SetLimit/TryGo.
type errGroup struct {
	cancel  func()
	wg      sync.WaitGroup
	errOnce sync.Once
	err     error
}

func withContext(ctx context.Context) (*errGroup, context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	return &errGroup{cancel: cancel}, ctx
}

func (g *errGroup) Go(f func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := f(); err != nil {
			g.errOnce.Do(func() {
				g.err = err
				if g.cancel != nil {
					g.cancel()
				}
			})
		}
	}()
}

func (g *errGroup) Wait() error {
	g.wg.Wait()
	if g.cancel != nil {
		g.cancel()
	}
	return g.err
}

const errgroupMembers = 10_000

var errFailed = errors.New("failed")

// errgroupCancel — errgroup_cancel.
//
// One op = one rep. Per rep: a group from withContext, N = 10,000 members
// started with Go, each calling parked.Done() and then waiting on
// <-ctx.Done(); once all have counted down, one more member records t0 and
// returns an error. Latency = Wait() returning − t0. Checked: Wait returns
// that error. Into a histogram: extras p50_ns, p99_ns, p999_ns and max_ns
// (exact). The measured region is all reps, setup included.
// Ops: 200 normal, 20 quick.
func errgroupCancel(b *B) {
	reps := b.Size(200, 20)
	var h Histogram
	var maxNs int64
	b.Start()
	for r := 0; r < reps; r++ {
		g, ctx := withContext(context.Background())
		var parked sync.WaitGroup
		parked.Add(errgroupMembers)
		for i := 0; i < errgroupMembers; i++ {
			g.Go(func() error {
				parked.Done()
				<-ctx.Done()
				return nil
			})
		}
		parked.Wait()
		var t0 time.Time
		g.Go(func() error {
			t0 = time.Now()
			return errFailed
		})
		err := g.Wait()
		end := time.Now()
		if err != errFailed {
			panic(fmt.Sprintf("errgroup_cancel: Wait returned %v", err))
		}
		ns := int64(end.Sub(t0))
		h.Record(ns)
		if ns > maxNs {
			maxNs = ns
		}
	}
	b.Stop()
	b.SetOps(reps)
	withQuantiles(b, &h)
	b.Extra("max_ns", maxNs)
	b.Extra("n", errgroupMembers)
}
