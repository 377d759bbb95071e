//! Local stand-ins for package registries and a git host
//! (tests/py/standins.py), on the host's 127.0.0.1.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use super::PY;

/// The stand-in servers of one test, stopped (by PID) when dropped.
pub struct StandIns {
    child: Child,
    ports: serde_json::Value,
    pub dir: PathBuf,
}

impl StandIns {
    /// Starts every stand-in, serving `packages` chained packages
    /// (`cordon-fixture-0` depends on `-1`, ...), with its files in `dir`.
    pub fn start(dir: &Path, packages: usize) -> StandIns {
        std::fs::create_dir_all(dir).unwrap();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/standins.py");
        let mut child = std::process::Command::new(PY)
            .arg(script)
            .arg(dir)
            .args(["--packages", &packages.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("stand-ins");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ports = serde_json::from_str(&line).unwrap_or_else(|e| {
            let _ = child.kill();
            panic!("stand-ins did not start ({e}): {line:?}")
        });
        StandIns {
            child,
            ports,
            dir: dir.to_path_buf(),
        }
    }

    pub fn port(&self, kind: &str) -> u64 {
        self.ports[kind].as_u64().expect("port")
    }

    /// The stand-in's base URL as the sandbox reaches it.
    pub fn url(&self, kind: &str) -> String {
        format!("http://host.cordon.internal:{}", self.port(kind))
    }

    /// The stand-in's base URL under another name for the host's loopback
    /// (`localhost`), which only learn mode or a rule lets through.
    pub fn url_as(&self, host: &str, kind: &str) -> String {
        format!("http://{host}:{}", self.port(kind))
    }

    /// The `--allow-domain` value that lets the sandbox reach it.
    pub fn allow(&self, kind: &str) -> String {
        format!("host.cordon.internal:{}", self.port(kind))
    }

    /// The requests it served, one `METHOD PATH` per line.
    pub fn served(&self, kind: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{kind}.log"))).unwrap_or_default()
    }
}

impl Drop for StandIns {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
