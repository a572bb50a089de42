// lang.rs: the Rust service of the language test project (rustc -O -g,
// Debian's 1.63: no std::hint::black_box yet, so volatile reads and an
// atomic keep the work from being folded away).  Different constants:
// LLVM's function merging would fold equal bodies into one.
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

const UNIT: u64 = 2_000_000;
static SINK: AtomicU64 = AtomicU64::new(0);

fn opaque(v: u64) -> u64 {
    unsafe { std::ptr::read_volatile(&v) }
}

#[inline(never)]
fn hot_seventy_five(mut x: u64, units: u64) -> u64 {
    for _ in 0..opaque(units * UNIT) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    }
    x
}

#[inline(never)]
fn cool_twenty_five(mut x: u64, units: u64) -> u64 {
    for _ in 0..opaque(units * UNIT) {
        x = x.wrapping_mul(2862933555777941757).wrapping_add(3037000493);
    }
    x
}

fn main() {
    let mut x: u64 = 1;
    let mut round: u64 = 0;
    loop {
        round += 1;
        x = hot_seventy_five(x, opaque(3));
        x = cool_twenty_five(x, opaque(1));
        SINK.store(x, Ordering::Relaxed);
        if round % 50 == 0 {
            let _ = writeln!(std::io::stdout(), "lang: {} rounds", round);
        }
    }
}
