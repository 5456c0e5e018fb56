//go:build go1.23

// go.mod says `go 1.22`, and the go command derives the binary's default
// GODEBUG from that line: with it, Go 1.23+ would build this twin with
// asynctimerchan=1, the pre-1.23 timer channels (NewTimer/After/NewTicker
// timers put in a timer heap at once, channels of capacity 1). The time group
// mirrors Go's own time benchmarks as the toolchain runs them, so with a 1.23+
// toolchain the twin uses the current synchronous timer channels. The build
// constraint keeps a 1.22 toolchain (which does not know the setting) working.
// Check: `go version -m <binary>` shows DefaultGODEBUG=asynctimerchan=0.

//go:debug asynctimerchan=0

package main
