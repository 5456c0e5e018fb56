// A future in a `recv(..)` case: the error points to the `await(..)` case.
fn main() {
    futures::executor::block_on(async {
        let (_tx, rx) = goro::chan::bounded::<u8>(1);
        goro::select! {
            recv(rx) -> _ => {}
            recv(async { 1u8 }) -> _ => {}
        }
    });
}
