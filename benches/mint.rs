//! Leaf-certificate minting for TLS inspection: the per-sandbox CA's
//! generation, a leaf's first mint, and a cached lookup.
//!
//!     cargo bench --bench mint

use std::hint::black_box;
use std::time::{Duration, Instant};

use cordon::credentials::ca::SandboxCa;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    // `cargo test --all-targets` builds and runs benches too, without
    // `--bench`: a measurement has no place in a test run.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runs = 200;
    let generate = median(
        (0..runs / 4)
            .map(|_| {
                let t = Instant::now();
                black_box(SandboxCa::generate("cordon-bench").expect("CA"));
                t.elapsed()
            })
            .collect(),
    );
    let ca = SandboxCa::generate("cordon-bench").expect("CA");
    let first = median(
        (0..runs)
            .map(|i| {
                let host = format!("host-{i}.example.com");
                let t = Instant::now();
                black_box(ca.leaf(&host).expect("leaf"));
                t.elapsed()
            })
            .collect(),
    );
    let ip_first = median(
        (0..runs)
            .map(|i| {
                let host = format!("10.9.{}.{}", i / 250, i % 250 + 1);
                let t = Instant::now();
                black_box(ca.leaf(&host).expect("leaf"));
                t.elapsed()
            })
            .collect(),
    );
    let cached = median(
        (0..runs * 50)
            .map(|i| {
                let host = format!("host-{}.example.com", i % runs);
                let t = Instant::now();
                black_box(ca.leaf(&host).expect("leaf"));
                t.elapsed()
            })
            .collect(),
    );
    println!("median over {runs} hosts (cached: {} lookups)", runs * 50);
    println!("{:<28} {:>12?}", "CA generation", generate);
    println!("{:<28} {:>12?}", "leaf, first (DNS name)", first);
    println!("{:<28} {:>12?}", "leaf, first (IP address)", ip_first);
    println!("{:<28} {:>12?}", "leaf, cached", cached);
}
