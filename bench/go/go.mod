module goro/bench/go

go 1.22
