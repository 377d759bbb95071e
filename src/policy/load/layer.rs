//! One layer of policy, read and checked before anything of it is applied,
//! and how it is applied on top of the layers before it (each key merges
//! as its declaration says).

use crate::policy::keys::Pending;
use crate::policy::{Policy, Source};

/// One key's value in a layer, with the byte offset of its key in the
/// file (0 for flags).
pub struct Setting {
    /// The value, ready to apply.
    pub pending: Box<dyn Pending>,
    /// Where its key is.
    pub at: usize,
}

/// One layer (a file, or the flags): its settings in the order read.
#[derive(Default)]
pub struct Fragment {
    settings: Vec<Setting>,
}

impl Fragment {
    /// Adds a setting.
    pub fn push(&mut self, setting: Setting) {
        self.settings.push(setting);
    }

    /// Its settings.
    pub fn settings(&self) -> &[Setting] {
        &self.settings
    }

    /// Applies every setting on top of `policy`, each entry from the
    /// source `source_of` names for its setting.
    pub fn apply_with(self, policy: &mut Policy, source_of: impl Fn(&dyn Pending) -> Source) {
        for setting in self.settings {
            let source = source_of(setting.pending.as_ref());
            setting.pending.apply(policy, &source);
        }
    }

    /// Applies every setting on top of `policy`, every entry from `source`.
    pub fn apply(self, policy: &mut Policy, source: &Source) {
        self.apply_with(policy, |_| source.clone());
    }
}
