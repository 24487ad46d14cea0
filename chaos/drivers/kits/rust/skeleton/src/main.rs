//! A lock driver for lockchaos (docs/driver-protocol.md), on the Rust driver kit. The lock is
//! in lock.rs: replace it with yours. Build with ./build.sh, then
//!
//!     lockchaos run --lock exec:target/release/my-lock-driver --faults client-pause,partition

mod lock;

use lockchaos_driver_kit::{serve, Description};

fn main() {
    let description = Description {
        driver: "my-lock".into(),
        library: "redis-rs 0.23".into(),
        ..Description::default()
    };
    serve(description, lock::CompareAndDelete::open)
}
