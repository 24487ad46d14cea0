//! @NAME@: a lock driver for lockchaos (docs/driver-protocol.md), on the Rust driver kit. The
//! lock is in lock.rs: replace its methods with your library's calls. Build with ./build.sh,
//! then
//!
//!     lockchaos run --lock exec:@DIR@/target/release/driver --faults client-pause,partition

mod lock;

use lockchaos_driver_kit::{serve, Description};

fn main() {
    let description = Description {
        driver: "@NAME@".into(),
        library: "redis-rs 0.23".into(),
        ..Description::default()
    };
    serve(description, lock::CompareAndDelete::open)
}
