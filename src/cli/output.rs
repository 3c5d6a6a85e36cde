//! Standard output that a closed pipe cannot crash: `tolerant show 1 | head` ends quietly.
//!
//! `println!` panics when stdout is a pipe whose reader has gone (EPIPE: Rust ignores SIGPIPE). Every
//! subcommand prints through [`out!`] and [`out_text!`] instead: the first write that finds the pipe
//! closed marks stdout closed, later writes are skipped, and the command carries on to its normal end
//! (a `tolerant run` piped into `head` still finishes and stores its runs). Other write errors are
//! reported once on stderr. Messages for stderr go through [`err_out!`], which ignores a closed stderr.

use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout's reader has gone (or stdout failed otherwise): nothing more is written.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to stdout, followed by a newline when `newline`; never panics.
pub fn write(text: fmt::Arguments<'_>, newline: bool) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(text)
        .and_then(|()| {
            if newline {
                stdout.write_all(b"\n")
            } else {
                Ok(())
            }
        })
        .and_then(|()| stdout.flush());
    if let Err(error) = written {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        if error.kind() != ErrorKind::BrokenPipe {
            // Best effort: stderr may be gone too, and that must not panic either.
            let _ = writeln!(
                std::io::stderr(),
                "tolerant: cannot write to stdout: {error}"
            );
        }
    }
}

/// Writes `text` and a newline to stderr; a closed stderr is ignored (`2>&1 | head` must not panic either).
pub fn write_err(text: fmt::Arguments<'_>) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_fmt(text)
        .and_then(|()| stderr.write_all(b"\n"));
}

/// `println!` that a closed stdout does not crash.
macro_rules! out {
    () => {
        $crate::cli::output::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::cli::output::write(format_args!($($arg)*), true)
    };
}

/// `print!` that a closed stdout does not crash.
macro_rules! out_text {
    ($($arg:tt)*) => {
        $crate::cli::output::write(format_args!($($arg)*), false)
    };
}

/// `eprintln!` that a closed stderr does not crash.
macro_rules! err_out {
    ($($arg:tt)*) => {
        $crate::cli::output::write_err(format_args!($($arg)*))
    };
}

pub(crate) use {err_out, out, out_text};
