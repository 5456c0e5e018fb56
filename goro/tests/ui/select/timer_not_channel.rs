// A `Timer` where its channel is wanted: the error points at the argument
// and says to pass `timer.rx()`.
fn main() {
    let rt = goro::Runtime::builder().procs(1).build().unwrap();
    rt.block_on(async {
        let timer = goro::time::Timer::new(std::time::Duration::from_millis(1));
        goro::select! {
            recv(timer) -> _ => {}
        }
    });
}
