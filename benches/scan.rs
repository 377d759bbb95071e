//! The spelled scan of a streamed request body (`SpelledScan::push`, as a
//! body to a host a secret may not go to streams through the proxy), in
//! MiB/s for bodies of random bytes, base64 text and percent-encoded text,
//! pushed in 16 KiB frames.
//!
//!     cargo bench --bench scan

use std::hint::black_box;
use std::time::Instant;

use bytes::Bytes;
use cordon::credentials::inject::{Secret, Secrets, PLACEHOLDER_PREFIX};

const SIZE: usize = 64 << 20;
const FRAME: usize = 16 << 10;

/// Deterministic bytes that look random (xorshift).
fn random(size: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn main() {
    // `cargo test --all-targets` builds and runs benches too, without
    // `--bench`: a measurement has no place in a test run.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let placeholder = format!("{PLACEHOLDER_PREFIX}{}", "5f".repeat(16));
    let secrets = Secrets::from_list(vec![Secret::new(
        "BENCH",
        &placeholder,
        b"not-a-secret".to_vec(),
        vec![],
    )]);
    let bytes = random(SIZE);
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let base64: Vec<u8> = bytes
        .iter()
        .map(|b| ALPHABET[usize::from(b & 63)])
        .collect();
    let percent: Vec<u8> = bytes
        .iter()
        .map(|b| match b % 8 {
            0 => b'%',
            1 => b'c',
            _ => b'a' + b % 26,
        })
        .collect();
    println!("spelled scan of a streamed body, {FRAME} B frames");
    for (name, body) in [
        ("random", &bytes),
        ("base64", &base64),
        ("percent", &percent),
    ] {
        let frames: Vec<Bytes> = body.chunks(FRAME).map(Bytes::copy_from_slice).collect();
        let best = (0..5)
            .map(|_| {
                let mut scan = secrets.scan_spelled();
                let start = Instant::now();
                let mut out = 0;
                for frame in &frames {
                    out += black_box(scan.push(frame.clone()).expect("no placeholder")).len();
                }
                out += scan.finish().len();
                assert_eq!(out, body.len());
                start.elapsed()
            })
            .min()
            .expect("runs");
        let rate = SIZE as f64 / (1 << 20) as f64 / best.as_secs_f64();
        println!("{name:<8} {rate:>8.0} MiB/s");
    }
}
