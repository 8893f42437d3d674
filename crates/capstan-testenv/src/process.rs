//! A child process that is always killed: on drop (also while a test panics) and, through
//! `setpriv --pdeathsig`, when the thread that started it dies (e.g. the test process is killed).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::{Result, io_err};

pub struct ChildGuard {
    name: String,
    child: Child,
    log: PathBuf,
}

impl ChildGuard {
    /// Starts `program` with `args`, stdout and stderr going to `log`.
    pub fn spawn(name: &str, program: &Path, args: &[String], log: &Path) -> Result<Self> {
        Self::spawn_with_env(name, program, args, &[], log)
    }

    /// [`ChildGuard::spawn`] with these environment variables set.
    pub fn spawn_with_env(
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(&str, &str)],
        log: &Path,
    ) -> Result<Self> {
        let out = File::create(log).map_err(io_err(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(io_err(format!("duplicating {}", log.display())))?;
        // `setpriv --pdeathsig` (util-linux) sets the parent-death signal and then execs the
        // program, so the server dies with the thread that started it (e.g. when the test process
        // is killed) with no pre-exec hook of our own.
        let mut cmd = Command::new("setpriv");
        cmd.arg("--pdeathsig=KILL").arg("--").arg(program);
        cmd.args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = cmd
            .spawn()
            .map_err(io_err(format!("starting {}", program.display())))?;
        Ok(Self {
            name: name.to_string(),
            child,
            log: log.to_path_buf(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `Some(description)` once the process has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(format!("{} exited ({status})", self.name)),
            Ok(None) => None,
            Err(e) => Some(format!("{}: {e}", self.name)),
        }
    }

    /// Where the process's output goes.
    pub fn log_path(&self) -> &std::path::Path {
        &self.log
    }

    /// The last `lines` lines of the process's output, for error messages.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        let start = all.len().saturating_sub(lines);
        format!(
            "--- last lines of {} ({}) ---\n{}",
            self.name,
            self.log.display(),
            all[start..].join("\n")
        )
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // Already-exited children make kill fail harmlessly; wait reaps them either way.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
