// The Go twin of the HTTP rows (scripts/http-bench.sh): net/http serving
// the same `GET /` as examples/axum_app.rs, with the same limits
// (ReadHeaderTimeout 5 s, WriteTimeout 10 s, IdleTimeout 60 s), over TLS
// with a self-signed ECDSA P-256 certificate made at start (HTTP/2 through
// net/http's built-in support, ALPN h2 and http/1.1) or in clear text
// (HTTP/1.1).
//
//	go-http [-addr HOST:PORT] [-procs N] [-tls]
//
// Prints `listening on http(s)://ADDR`, serves until killed.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"
)

func selfSigned() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "where to listen (printed)")
	procs := flag.Int("procs", runtime.NumCPU(), "GOMAXPROCS")
	useTLS := flag.Bool("tls", false, "HTTPS (and HTTP/2) with a self-signed certificate")
	flag.Parse()
	if *procs < 1 {
		fmt.Fprintf(os.Stderr, "go-http: -procs %d: expected 1 or more\n", *procs)
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*procs)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("Hello, World!"))
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-http: listen on %s: %v\n", *addr, err)
		os.Exit(1)
	}
	if *useTLS {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{selfSigned()}}
		fmt.Printf("listening on https://%s\n", ln.Addr())
		err = srv.ServeTLS(ln, "", "")
	} else {
		fmt.Printf("listening on http://%s\n", ln.Addr())
		err = srv.Serve(ln)
	}
	fmt.Fprintf(os.Stderr, "go-http: %v\n", err)
	os.Exit(1)
}
