//! TEST-ONLY: switch layers off, to prove that `cordon probe` notices.
//!
//! `CORDON_TEST_WEAKEN=namespaces,files,landlock,seccomp,unixgate,caps,nnp,env,initenv,proxy`
//! makes the supervisor and init skip those layers. It is honoured only in
//! debug builds (`cfg(debug_assertions)`), which is what `cargo test` runs;
//! a release build compiles [`off`] to `false` and never reads the variable.
//! Nothing else may call into this module.

/// The variable naming the layers to skip.
pub const VAR: &str = "CORDON_TEST_WEAKEN";

/// Whether the test asked to skip `layer` (always false in release builds).
pub fn off(layer: &str) -> bool {
    #[cfg(debug_assertions)]
    {
        let Ok(value) = std::env::var(VAR) else {
            return false;
        };
        // Never silent: a weakened sandbox says so, once per process.
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| {
            crate::say!("cordon: WARNING: debug build with {VAR}={value}: these layers are OFF");
        });
        value.split(',').any(|l| l.trim() == layer)
    }
    #[cfg(not(debug_assertions))]
    {
        let _ = layer;
        false
    }
}

/// TEST-ONLY: a number a test sets in the environment variable `name`
/// (`CORDON_TEST_SCAN_LIMIT`: the repository walk's entry limit), so a
/// limit can be hit without millions of files. Debug builds only; release
/// builds never read it.
pub fn number(name: &str) -> Option<usize> {
    #[cfg(debug_assertions)]
    {
        let value = std::env::var(name).ok()?.parse().ok()?;
        crate::say!("cordon: WARNING: debug build with {name}={value}");
        Some(value)
    }
    #[cfg(not(debug_assertions))]
    {
        let _ = name;
        None
    }
}
