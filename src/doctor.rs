//! `cordon doctor`: what this kernel can enforce, and whether `cordon run`
//! would refuse.

use serde::Serialize;

use crate::policy::defaults;
use crate::policy::{Layer, Limits, Source, Sourced};
use crate::sandbox::limits::{LimitPlan, Mechanism};
use crate::sandbox::support;

/// One line of the report.
#[derive(Debug, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: &'static str,
    /// The layer `cordon run` would refuse without, if any.
    pub layer: Option<Layer>,
    /// Whether it works here.
    pub ok: bool,
    /// What was found, or why it fails.
    pub detail: String,
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
    /// Whether `cordon run` (without `--allow-degraded`) would run.
    pub run_would_work: bool,
}

/// Examines the kernel. Changes nothing on the host, except a cgroup that
/// is created and removed again to see whether limits would apply.
pub fn examine() -> Report {
    let mut checks = Vec::new();
    let euid = nix::unistd::geteuid();
    let restrictions = support::userns_restrictions();
    checks.push(Check {
        name: "user namespace restrictions",
        layer: None,
        ok: restrictions.is_empty(),
        detail: if restrictions.is_empty() {
            "none found (kernel.unprivileged_userns_clone, user.max_user_namespaces, apparmor_restrict_unprivileged_userns)".into()
        } else {
            restrictions.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
        },
    });
    let ns = support::try_namespaces();
    checks.push(Check {
        name: "namespaces (user, mount, pid, net, ipc, uts)",
        layer: Some(Layer::Namespaces),
        ok: ns.is_ok(),
        detail: match ns {
            Ok(()) => format!("created as uid {euid}; network namespace with only lo"),
            Err(e) => format!("{e}; fix: {}", support::userns_fix()),
        },
    });
    let abi = support::landlock_abi();
    checks.push(Check {
        name: "landlock",
        layer: Some(Layer::Landlock),
        ok: abi.is_ok(),
        detail: match abi {
            Ok(v) => {
                let mut features = vec!["files"];
                if v >= 2 {
                    features.push("rename/link across dirs (refer)");
                }
                if v >= 3 {
                    features.push("truncate");
                }
                if v >= 4 {
                    features.push("TCP bind/connect");
                }
                if v >= 5 {
                    features.push("device ioctl");
                }
                if v >= 6 {
                    features.push("abstract UNIX socket and signal scopes");
                }
                if v >= 7 {
                    features.push("audit logging");
                }
                format!("ABI {v}: {}", features.join(", "))
            }
            Err(e) => format!("{e}; fix: {}", support::fix_for(Layer::Landlock)),
        },
    });
    let seccomp = support::seccomp_available();
    checks.push(Check {
        name: "seccomp filters",
        layer: Some(Layer::Seccomp),
        ok: seccomp,
        detail: if seccomp {
            format!(
                "available; cordon denies {} syscall classes",
                crate::sandbox::seccomp::denied_summary().len()
            )
        } else {
            support::fix_for(Layer::Seccomp)
        },
    });
    let gate = crate::sandbox::seccomp::gate_support();
    checks.push(Check {
        name: "UNIX socket gate",
        layer: Some(Layer::Seccomp),
        ok: gate.is_ok(),
        detail: match gate {
            Ok(()) => {
                "seccomp user notification and pidfd_getfd: host UNIX sockets are refused by path"
                    .to_string()
            }
            Err(e) => format!("{e}; fix: {}", support::fix_for(Layer::Seccomp)),
        },
    });
    let mounts = support::cgroups();
    let hierarchy = match (&mounts.v2, &mounts.v1_pids) {
        (Some(v2), Some(v1)) => format!(
            "hybrid: cgroup2 at {}, v1 pids at {}",
            v2.display(),
            v1.display()
        ),
        (Some(v2), None) => format!("cgroup2 at {}", v2.display()),
        (None, Some(v1)) => format!("v1 pids at {}", v1.display()),
        (None, None) => "none mounted".into(),
    };
    let limits = Limits {
        max_procs: Sourced::new(defaults::MAX_PROCS, Source::Builtin),
        max_tmp: Sourced::new(defaults::MAX_TMP, Source::Builtin),
        max_memory: None,
        timeout: None,
    };
    let (limits_ok, limits_detail) =
        match LimitPlan::prepare(&limits, &format!("doctor-{}", std::process::id())) {
            Ok(plan) => {
                let how = plan.describe();
                let note = match plan.mechanism {
                    Mechanism::Rlimits => "; --max-memory uses RLIMIT_AS (per process)",
                    Mechanism::Cgroup(_) => "",
                };
                plan.remove();
                (
                    true,
                    format!("{hierarchy}; tasks and memory by {how}{note}; /tmp size by tmpfs"),
                )
            }
            Err(e) => (false, format!("{hierarchy}; {e}")),
        };
    checks.push(Check {
        name: "resource limits",
        layer: Some(Layer::Limits),
        ok: limits_ok,
        detail: limits_detail,
    });
    let run_would_work = checks.iter().all(|c| c.ok || c.layer.is_none());
    Report {
        checks,
        run_would_work,
    }
}

/// The report as text.
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    for c in &report.checks {
        let mark = if c.ok {
            "ok  "
        } else if c.layer.is_some() {
            "FAIL"
        } else {
            "warn"
        };
        out.push_str(&format!("{mark}  {:<44} {}\n", c.name, c.detail));
    }
    out.push_str(if report.run_would_work {
        "\ncordon run: every layer can be applied here.\n"
    } else {
        "\ncordon run: would REFUSE to run here (see FAIL above), unless --allow-degraded names the failing layer.\n"
    });
    out
}
