//! Tests of the buffer budget.

use super::*;
use crate::policy::Source;

#[test]
fn the_buffer_budget_follows_max_memory_and_is_released_on_drop() {
    assert_eq!(Buffers::new(None).bytes, BUFFER_BUDGET);
    let limit = |bytes| Sourced::new(bytes, Source::Flag("--max-memory".into()));
    let small = Buffers::new(Some(&limit(128 << 20)));
    assert_eq!(small.bytes, 32 << 20);
    assert!(small.why.contains("max_memory") && small.why.contains("--max-memory"));
    assert_eq!(Buffers::new(Some(&limit(8 << 30))).bytes, BUFFER_BUDGET);
    // Never less than one whole body.
    assert_eq!(Buffers::new(Some(&limit(1 << 20))).bytes, BODY_CAP);
    let one = Buffers::new(Some(&limit(1 << 20)));
    let held = one.reserve(BODY_CAP).expect("the budget fits one body");
    assert!(one.reserve(1).is_none());
    drop(held);
    assert!(one.reserve(BODY_CAP).is_some());
}
