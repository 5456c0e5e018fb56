// A future where a channel is wanted: `select!` waits on channels only.
fn main() {
    futures::executor::block_on(async {
        let (_tx, rx) = goro::chan::bounded::<u8>(1);
        goro::select! {
            recv(rx) -> _ => {}
            recv(async { 1u8 }) -> _ => {}
        }
    });
}
