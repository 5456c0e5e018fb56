package main

// A latency histogram, the same as goro-bench's rt::Histogram so that the
// p50/p99/p999 extras of the two sides are read off identical buckets.

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// histSub is log2 of the sub-buckets per power of two (16 sub-buckets).
const histSub = 4

// Histogram counts nanosecond values in log-linear buckets: values below 16
// exactly, above that 16 buckets per power of two (relative width 1/16, so a
// quantile is within about ±3% of the true value). Record is safe from
// several goroutines at once (one atomic add).
type Histogram struct {
	buckets [16 + 60*16]atomic.Uint64
}

func histIndex(v uint64) int {
	if v < 16 {
		return int(v)
	}
	e := 63 - bits.LeadingZeros64(v) // >= 4
	sub := (v >> (e - histSub)) & 15
	return 16 + (e-histSub)*16 + int(sub)
}

// histValue is the midpoint of bucket i (what a quantile reports).
func histValue(i int) float64 {
	if i < 16 {
		return float64(i)
	}
	e := (i-16)/16 + histSub
	sub := uint64((i - 16) % 16)
	lo := (16 + sub) << (e - histSub)
	width := uint64(1) << (e - histSub)
	return float64(lo) + float64(width)/2
}

// Record adds one value in nanoseconds (negative counts as 0).
func (h *Histogram) Record(ns int64) {
	if ns < 0 {
		ns = 0
	}
	i := min(histIndex(uint64(ns)), len(h.buckets)-1)
	h.buckets[i].Add(1)
}

// RecordSince adds the time since t.
func (h *Histogram) RecordSince(t time.Time) { h.Record(int64(time.Since(t))) }

// Quantile returns the q quantile (0..1) in nanoseconds; 0 when empty. The
// rank is ceil(q·total) clamped to [1, total], as on the Rust side.
func (h *Histogram) Quantile(q float64) float64 {
	var counts [len(h.buckets)]uint64
	var total uint64
	for i := range h.buckets {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	rank = min(max(rank, 1), total)
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return histValue(i)
		}
	}
	return histValue(len(counts) - 1)
}

// withQuantiles adds the p50_ns, p99_ns and p999_ns extras from h.
func withQuantiles(b *B, h *Histogram) {
	b.Extra("p50_ns", round2(h.Quantile(0.5)))
	b.Extra("p99_ns", round2(h.Quantile(0.99)))
	b.Extra("p999_ns", round2(h.Quantile(0.999)))
}
