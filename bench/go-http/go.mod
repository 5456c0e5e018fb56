module goro/bench/go-http

go 1.22
