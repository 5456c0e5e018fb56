package main

// The second copy of the process that the oversub workloads run beside
// themselves (goro-bench's load.rs, the same protocol).
//
// oversub measures a workload while the cores are oversubscribed by a second
// copy of the same program running the same workload at the same GOMAXPROCS.
// The copy is this binary started with the hidden flag `-load <workload>`
// (plus the parent's -procs and -quick): it runs the workload once (warm),
// prints `ready` on stdout, then runs it in a loop, printing nothing more. It
// exits when its stdin closes — the parent closes it and kills the copy after
// the measured region, and the kernel closes it when the parent dies in any
// way — and after 120 s whatever happens, so a stuck parent never leaves it
// behind for long.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// loadMaxLife is the longest a load copy lives.
const loadMaxLife = 120 * time.Second

// loadChild is a running second copy; stop ends it.
type loadChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "goro-bench-go: "+format+"\n", args...)
	os.Exit(1)
}

// startLoad starts the second copy running workload at b's procs and size,
// and returns once it has finished its warm-up run and said `ready`. A copy
// that cannot start fails the whole process with one line on stderr.
func startLoad(b *B, workload string) *loadChild {
	exe, err := os.Executable()
	if err != nil {
		fatalf("oversub: cannot find own executable: %v", err)
	}
	args := []string{"-load", workload, "-procs", strconv.Itoa(b.Procs)}
	if b.Quick {
		args = append(args, "-quick")
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr // an *os.File: no copying goroutine
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fatalf("oversub: stdin pipe: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fatalf("oversub: stdout pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		fatalf("oversub: cannot start the second copy: %v", err)
	}
	c := &loadChild{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		c.stop()
		fatalf("oversub: the second copy exited before it was ready (said %q, %v)", strings.TrimSpace(line), err)
	}
	return c
}

// stop closes the copy's stdin, kills it and reaps it (goro-bench: dropping
// the LoadChild kills and waits).
func (c *loadChild) stop() {
	_ = c.stdin.Close()
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait() // "signal: killed" is the expected outcome
}

// loadMain is the `-load <workload>` mode: run the workload in a loop until
// stdin closes or loadMaxLife passes. It never returns.
func loadMain(name string, procs int, quick bool) {
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // returns at EOF or on an error
		os.Exit(0)
	}()
	time.AfterFunc(loadMaxLife, func() { os.Exit(0) })
	w, ok := lookup(name)
	if !ok {
		fatalf("-load: unknown workload %q", name)
	}
	if strings.HasPrefix(name, "oversub/") {
		fatalf("-load: %s starts a copy itself", name)
	}
	ready := false
	for {
		if _, err := runOnce(w, procs, quick); err != nil {
			fatalf("-load: %v", err)
		}
		if !ready {
			ready = true
			fmt.Println("ready")
		}
	}
}
