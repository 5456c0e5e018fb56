package main

// The net group of goro-bench/README.md: the Go servers. Unlike every other group,
// these workloads are not run here: goro-bench starts this binary once per
// row as
//
//	goro-bench-go -serve <workload> -procs <n>
//
// which listens on an ephemeral loopback port, prints `listening ADDR` on
// stdout and serves until its stdin closes (serveMain below), and drives it
// with its own load generator (goro-bench/src/netload.rs), the same client
// that drives goro's and tokio's servers, so that only the server differs.
// What one op is, the connection counts and the op counts are therefore
// defined on the Rust side (workloads/net.rs: echo_spec, http_spec) and
// listed here only for -list:
//
//   - tcp_echo: one 64-byte message echoed (client write, server read,
//     server write, client read); 100 connections; 200,000 / 20,000 quick.
//   - http_hello: one HTTP/1.1 keep-alive GET answered "Hello, World!";
//     100 connections (50 quick); 100,000 / 10,000 quick.
//
// -workload tcp_echo (running it here) is refused with a message.

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"
)

// serveMaxLife is the longest a -serve process lives, whatever happens
// (goro-bench ends it at the end of its row, and its stdin closes when
// goro-bench dies).
const serveMaxLife = 15 * time.Minute

// netReadBuf is the echo server's read buffer (goro-bench: net::READ_BUF).
const netReadBuf = 1024

// netDeadline is http_hello's per-request read and write deadline.
const netDeadline = 5 * time.Second

// served maps a served workload to its server, which serves ln until ln is
// closed.
var served = map[string]func(ln net.Listener){}

// registerServed adds a workload that goro-bench drives against serve.
func registerServed(name, op string, serve func(ln net.Listener)) {
	served[name] = serve
	register(Workload{name, "net", op, func(b *B) {
		fatalf("%s is a server driven by goro-bench: start it with -serve %s", name, name)
	}})
}

func init() {
	registerServed("tcp_echo",
		"one 64-byte message echoed (client write, server read + write, client read), 100 connections; driven by goro-bench (-serve)",
		serveEcho)
	registerServed("http_hello",
		"one HTTP/1.1 keep-alive GET answered \"Hello, World!\", 5 s ReadTimeout/WriteTimeout, 100 connections (50 quick); driven by goro-bench (-serve)",
		serveHello)
}

// serveEcho — tcp_echo's server.
//
// An accept loop; one goroutine per connection reads into a 1 KiB buffer and
// writes back what it read, until the client closes. TCP_NODELAY is Go's
// default for TCP connections.
func serveEcho(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			buf := make([]byte, netReadBuf)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// helloBody is what http_hello answers.
var helloBody = []byte("Hello, World!")

// serveHello — http_hello's server.
//
// net/http's Server with ReadTimeout = WriteTimeout = 5 s (net/http sets the
// connection's read deadline when it starts reading each request and the
// write deadline once the request's head is in), keep-alive on (the
// default). The handler sets Content-Type: text/plain and Content-Length: 13
// and writes the body; net/http adds Date. Its error log is discarded (a
// client closing a connection is not news).
func serveHello(ln net.Listener) {
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			h := w.Header()
			h.Set("Content-Type", "text/plain")
			h.Set("Content-Length", "13")
			_, _ = w.Write(helloBody)
		}),
		ReadTimeout:  netDeadline,
		WriteTimeout: netDeadline,
		ErrorLog:     log.New(io.Discard, "", 0),
	}
	_ = srv.Serve(ln)
}

// serveMain is the -serve <workload> mode: listen on 127.0.0.1:0, say
// `listening ADDR`, serve in the background, and answer each `cpu` line on
// stdin with `cpu CPU_NS NVCSW NIVCSW` (this process's getrusage: user+sys
// ns and context switches), until stdin closes or serveMaxLife passes. It
// never returns.
func serveMain(name string) {
	serve, ok := served[name]
	if !ok {
		fatalf("-serve: %q is not a served workload (tcp_echo, http_hello)", name)
	}
	time.AfterFunc(serveMaxLife, func() { os.Exit(0) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("-serve %s: cannot listen on 127.0.0.1:0: %v", name, err)
	}
	go serve(ln)
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "listening %s\n", ln.Addr())
	out.Flush()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "cpu":
			var ru syscall.Rusage
			mustRusage(&ru)
			fmt.Fprintf(out, "cpu %d %d %d\n", cpuNs(&ru), ru.Nvcsw, ru.Nivcsw)
			out.Flush()
		default:
			fatalf("-serve: unknown command %q on stdin (want cpu)", in.Text())
		}
	}
	os.Exit(0)
}
