// Command goro-bench-go is the Go twin of goro-bench: it runs one workload
// from goro-bench/README.md on the Go runtime and prints one JSON object
// per measured run on stdout. The Rust harness (goro-bench) builds it with
// `go build -o <dir>/goro-bench-go .` and invokes it as
//
//	goro-bench-go -workload <name> -procs <n> -runs <N> [-quick]
//	goro-bench-go -list
//
// (and, internally, `goro-bench-go -load <workload> -procs <n> [-quick]`: the
// second copy that the oversub workloads start beside themselves, load.go;
// `goro-bench-go -serve <workload> -procs <n>`: the server of a net workload,
// which goro-bench drives with its own load generator, net.go).
//
// Each workload lives in the file of its group (sched.go, chan.go, ...), and
// registers itself from that file's init function; this file holds the
// registry, the measurement harness and the CLI. Standard library only.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"
)

// Workload is one entry of the registry.
type Workload struct {
	Name  string     // as in goro-bench/README.md, e.g. "ring/n=100"
	Group string     // "sched", "chan", "time", "pool", "sync", "net"
	Op    string     // one line: what one op is
	Run   func(b *B) // runs the workload once; see B for the contract
}

// groupOrder fixes the order of -list; a group not named here sorts last.
var groupOrder = []string{"sched", "chan", "time", "pool", "sync", "memory", "net"}

var registry []Workload

// fixedProcs holds the workloads that always run at one GOMAXPROCS whatever
// -procs says (goro-bench's `.fixed_procs(p)`, e.g. burst/procs=16); the
// name says it, and the JSON "procs" reports it.
var fixedProcs = map[string]int{}

// fixProcs marks workload name as always running at p procs.
func fixProcs(name string, p int) { fixedProcs[name] = p }

// register adds workloads; called from each group file's init.
func register(ws ...Workload) {
	for _, w := range ws {
		for _, have := range registry {
			if have.Name == w.Name {
				panic("duplicate workload " + w.Name)
			}
		}
		registry = append(registry, w)
	}
}

func sortedRegistry() []Workload {
	rank := func(g string) int {
		for i, x := range groupOrder {
			if x == g {
				return i
			}
		}
		return len(groupOrder)
	}
	ws := append([]Workload(nil), registry...)
	sort.SliceStable(ws, func(i, j int) bool { return rank(ws[i].Group) < rank(ws[j].Group) })
	return ws
}

func lookup(name string) (Workload, bool) {
	for _, w := range registry {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// B is handed to a workload's Run. The contract:
//
//   - Set up (spawn parked goroutines, make channels) before b.Start().
//   - b.Start() and b.Stop() bracket the measured region, exactly once each.
//   - b.SetOps(n) reports how many ops the measured region did (> 0).
//   - Tear down after b.Stop(): every goroutine the workload started must
//     have returned (or be about to) when Run returns.
//   - b.Extra(k, v) adds a workload-specific metric to the JSON "extra".
type B struct {
	Procs int  // GOMAXPROCS for this run
	Quick bool // -quick: smaller op counts

	ops     int64
	extra   map[string]any
	started bool
	stopped bool

	t0, t1     time.Time
	ru0, ru1   syscall.Rusage
	ms0, ms1   runtime.MemStats
	numGC0     uint32
	wallNs     int64
	cpuNs      int64
	nvcsw      int64
	nivcsw     int64
	gcCycles   uint32
	mallocs    uint64
	allocBytes uint64
}

// Size returns normal or, with -quick, quick.
func (b *B) Size(normal, quick int) int {
	if b.Quick {
		return quick
	}
	return normal
}

// Start opens the measured region. runtime.ReadMemStats stops the world, so
// it is read before the clocks start.
func (b *B) Start() {
	if b.started {
		panic("B.Start called twice")
	}
	b.started = true
	runtime.ReadMemStats(&b.ms0)
	mustRusage(&b.ru0)
	b.t0 = time.Now()
}

// Stop closes the measured region.
func (b *B) Stop() {
	if !b.started || b.stopped {
		panic("B.Stop without Start, or called twice")
	}
	b.t1 = time.Now()
	mustRusage(&b.ru1)
	b.stopped = true
	runtime.ReadMemStats(&b.ms1)

	b.wallNs = b.t1.Sub(b.t0).Nanoseconds()
	b.cpuNs = cpuNs(&b.ru1) - cpuNs(&b.ru0)
	b.nvcsw = int64(b.ru1.Nvcsw - b.ru0.Nvcsw)
	b.nivcsw = int64(b.ru1.Nivcsw - b.ru0.Nivcsw)
	b.gcCycles = b.ms1.NumGC - b.ms0.NumGC
	b.mallocs = b.ms1.Mallocs - b.ms0.Mallocs
	b.allocBytes = b.ms1.TotalAlloc - b.ms0.TotalAlloc
}

// SetOps records the op count of the measured region.
func (b *B) SetOps(n int) { b.ops = int64(n) }

// Extra adds a workload-specific metric (e.g. "p99_ns", "n", "cap").
func (b *B) Extra(k string, v any) {
	if b.extra == nil {
		b.extra = map[string]any{}
	}
	b.extra[k] = v
}

func mustRusage(ru *syscall.Rusage) {
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, ru); err != nil {
		fmt.Fprintln(os.Stderr, "getrusage:", err)
		os.Exit(1)
	}
}

// cpuNs is user+sys CPU time of the whole process (all threads).
func cpuNs(ru *syscall.Rusage) int64 { return ru.Utime.Nano() + ru.Stime.Nano() }

// gang is a set of goroutines spawned during setup and parked on a start
// gate, so that spawning them is not measured. release opens the gate; wait
// returns when every body has returned.
type gang struct {
	gate  chan struct{}
	ready sync.WaitGroup
	done  sync.WaitGroup
}

// newGang spawns n goroutines running body(i) once the gate opens, and
// returns after all n are running (parked on the gate).
func newGang(n int, body func(i int)) *gang {
	g := &gang{gate: make(chan struct{})}
	g.ready.Add(n)
	g.done.Add(n)
	for i := 0; i < n; i++ {
		go func(i int) {
			defer g.done.Done()
			g.ready.Done()
			<-g.gate
			body(i)
		}(i)
	}
	g.ready.Wait()
	return g
}

func (g *gang) release() { close(g.gate) }
func (g *gang) wait()    { g.done.Wait() }

// record is one output line. Field order is the JSON key order.
type record struct {
	Workload   string         `json:"workload"`
	Procs      int            `json:"procs"`
	Impl       string         `json:"impl"`
	Ops        int64          `json:"ops"`
	NsPerOp    float64        `json:"ns_per_op"`
	CPUNsPerOp float64        `json:"cpu_ns_per_op"`
	Extra      map[string]any `json:"extra"`
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// runOnce runs w once and checks the contract.
func runOnce(w Workload, procs int, quick bool) (*B, error) {
	base := runtime.NumGoroutine()
	runtime.GC() // start every run from the same heap state, outside the clock
	b := &B{Procs: procs, Quick: quick}
	w.Run(b)
	if !b.started || !b.stopped {
		return nil, fmt.Errorf("workload %s did not call Start/Stop", w.Name)
	}
	if b.ops <= 0 {
		return nil, fmt.Errorf("workload %s reported %d ops", w.Name, b.ops)
	}
	// Goroutines that already signalled completion may still be exiting;
	// give them a bounded moment, then complain (a leak skews later runs).
	for i := 0; i < 200 && runtime.NumGoroutine() > base; i++ {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		fmt.Fprintf(os.Stderr, "goro-bench-go: %s: %d goroutines left after the run\n", w.Name, n-base)
	}
	return b, nil
}

func toRecord(w Workload, b *B) record {
	ops := float64(b.ops)
	extra := map[string]any{
		"wall_ns":       b.wallNs,
		"cpu_ns":        b.cpuNs,
		"nvcsw":         b.nvcsw,
		"nivcsw":        b.nivcsw,
		"gc_cycles":     b.gcCycles,
		"allocs_per_op": round2(float64(b.mallocs) / ops),
		"bytes_per_op":  round2(float64(b.allocBytes) / ops),
	}
	for k, v := range b.extra {
		extra[k] = v
	}
	return record{
		Workload:   w.Name,
		Procs:      b.Procs,
		Impl:       "go",
		Ops:        b.ops,
		NsPerOp:    round2(float64(b.wallNs) / ops),
		CPUNsPerOp: round2(float64(b.cpuNs) / ops),
		Extra:      extra,
	}
}

func main() {
	var (
		list     = flag.Bool("list", false, "list workloads (name<TAB>group<TAB>op) and exit")
		workload = flag.String("workload", "", "workload name, e.g. ring/n=100")
		procs    = flag.Int("procs", runtime.NumCPU(), "GOMAXPROCS")
		runs     = flag.Int("runs", 5, "measured runs (after one warm-up run)")
		quick    = flag.Bool("quick", false, "smaller op counts")
		load     = flag.String("load", "", "")  // hidden: oversub's second copy (load.go)
		serve    = flag.String("serve", "", "") // hidden: a net workload's server (net.go)
	)
	flag.Usage = func() {
		out := flag.CommandLine.Output()
		fmt.Fprintf(out, "usage: %s -list | -workload <name> [-procs n] [-runs N] [-quick]\n", os.Args[0])
		flag.VisitAll(func(f *flag.Flag) {
			if f.Usage != "" { // flags without usage text are internal
				def := ""
				if f.DefValue != "" && f.DefValue != "false" {
					def = " (default " + f.DefValue + ")"
				}
				fmt.Fprintf(out, "  -%s\t%s%s\n", f.Name, f.Usage, def)
			}
		})
	}
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "goro-bench-go: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}

	if *list {
		for _, w := range sortedRegistry() {
			fmt.Printf("%s\t%s\t%s\n", w.Name, w.Group, w.Op)
		}
		return
	}
	if *load != "" {
		if *procs < 1 {
			fatalf("-procs must be >= 1")
		}
		if p, ok := fixedProcs[*load]; ok {
			*procs = p
		}
		runtime.GOMAXPROCS(*procs)
		loadMain(*load, *procs, *quick) // does not return
	}
	if *serve != "" {
		if *procs < 1 {
			fatalf("-procs must be >= 1")
		}
		runtime.GOMAXPROCS(*procs)
		serveMain(*serve) // does not return
	}
	if *workload == "" {
		fmt.Fprintln(os.Stderr, "goro-bench-go: -workload or -list is required")
		flag.Usage()
		os.Exit(2)
	}
	w, ok := lookup(*workload)
	if !ok {
		fmt.Fprintf(os.Stderr, "goro-bench-go: unknown workload %q (see -list)\n", *workload)
		os.Exit(2)
	}
	if *procs < 1 || *runs < 1 {
		fmt.Fprintln(os.Stderr, "goro-bench-go: -procs and -runs must be >= 1")
		os.Exit(2)
	}

	if p, ok := fixedProcs[w.Name]; ok && p != *procs {
		explicit := false
		flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "procs" })
		if explicit {
			fmt.Fprintf(os.Stderr, "goro-bench-go: %s always runs at procs=%d (-procs %d ignored)\n", w.Name, p, *procs)
		}
		*procs = p
	}

	runtime.GOMAXPROCS(*procs)
	enc := json.NewEncoder(os.Stdout) // one object per line
	for i := -1; i < *runs; i++ {     // i == -1 is the warm-up
		b, err := runOnce(w, *procs, *quick)
		if err != nil {
			fmt.Fprintln(os.Stderr, "goro-bench-go:", err)
			os.Exit(1)
		}
		if i < 0 {
			continue
		}
		if err := enc.Encode(toRecord(w, b)); err != nil {
			fmt.Fprintln(os.Stderr, "goro-bench-go:", err)
			os.Exit(1)
		}
	}
}
