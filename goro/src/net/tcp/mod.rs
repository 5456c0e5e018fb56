//! TCP: [`TcpListener`] and [`TcpStream`] on the runtime's poller.
//!
//! Both wrap a non-blocking mio socket registered with the poller of the
//! runtime that created them (`net/io.rs`). Operations take `&self`, as
//! std's and tokio's do, so one task can read a stream while another
//! writes it; deadlines follow Go (`net/deadline.rs`). A stream also
//! implements `futures_io::AsyncRead`/`AsyncWrite` (for `TcpStream` and
//! `&TcpStream`), so the `futures` ecosystem's adapters work on it.
//!
//! For code written against tokio's shape, [`TcpStream::split`] gives
//! borrowed halves and [`TcpStream::into_split`] owned ones
//! (`net/split.rs`): thin wrappers over the same `&self` operations, each
//! half with its direction's deadline.
//!
//! # Rejected
//!
//! - Splitting a stream into owned read and write halves as the only way
//!   to use both directions at once: `&self` operations give the same
//!   concurrency without an `Arc`; the halves are there for code that
//!   wants to hand each direction to its own task by value.
//!
//! # Where things are
//!
//! - `listener.rs`: [`TcpListener`], and the accept backlog.
//! - `stream.rs`: [`TcpStream`].
//! - `io_traits.rs`: `futures_io`'s traits for a stream.

mod io_traits;
mod listener;
mod stream;

pub use listener::TcpListener;
pub use stream::TcpStream;
