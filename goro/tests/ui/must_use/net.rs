// goro::net's operations are `async fn`s: an operation that is not awaited
// is an unused future, which rustc reports (Future is #[must_use]).
#![deny(unused_must_use)]

use goro::net::TcpStream;

async fn forgets(s: TcpStream) {
    let mut buf = [0; 4];
    s.read_exact(&mut buf);
    s.write_all(b"x");
    let (r, w) = s.split();
    r.read(&mut buf);
    w.write(b"x");
    let (r, w) = s.into_split();
    r.read_exact(&mut buf);
    w.write_all(b"x");
}

fn main() {
    let _ = forgets;
}
