// A case without `-> pattern`: the error names every accepted form.
fn main() {
    let (_tx, rx) = goro::chan::bounded::<u8>(1);
    goro::select! {
        recv(rx) => {}
        default => {}
    }
}
