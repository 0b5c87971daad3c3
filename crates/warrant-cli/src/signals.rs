//! SIGTERM and SIGINT end a `warrant` command the way a normal exit does, so that the stores it
//! opened close and a SQLite file is left whole (its log copied into it): killed by the signal's
//! default action, the process closed nothing, and the file alone lacked what its log held.
//!
//! The first signal asks the command to stop: a daemon (`scheduler run`) ends its loop, a long
//! command (`store export`) stops at its next row, and any other finishes the step it is in (a
//! turn commits whole or not at all) and exits as it would have. A second signal ends the
//! process at once, as a kill does; SQLite then recovers the log at the next open. `serve` and
//! `mcp` answer the signals on their own runtimes, with the same effect.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::Exit;

/// Set by the first SIGTERM or SIGINT: the signal's number; 0 before one came.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// Whether the handlers are in place.
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
/// The flag a daemon's loop reads ([`stop_flag`]), raised with [`RECEIVED`].
static STOP: AtomicBool = AtomicBool::new(false);

/// SIGINT's number, and the status a process it stopped exits with (128 + 2).
const SIGINT: i32 = 2;
/// SIGTERM's number (128 + 15 on exit).
const SIGTERM: i32 = 15;

/// Puts the handlers in place, once per process; from then on SIGTERM and SIGINT no longer end
/// the process by themselves. Called before a command opens a store, so that a signal that
/// comes while it is open is answered by a clean end.
pub(crate) fn hold() -> Result<(), Exit> {
    INSTALLED.get_or_init(install).clone().map_err(Exit::Input)
}

/// The flag that says a signal asked the process to stop, for a daemon's loop.
pub(crate) fn stop_flag() -> Result<&'static AtomicBool, Exit> {
    hold()?;
    Ok(&STOP)
}

/// The signal that asked the process to stop, if one did.
pub(crate) fn received() -> Option<i32> {
    Some(RECEIVED.load(Ordering::SeqCst)).filter(|&n| n != 0)
}

/// Says whether a signal asked the process to stop, as the error a long command ends with.
pub(crate) fn check() -> Result<(), Exit> {
    match received() {
        Some(signal) => Err(Exit::Signalled(signal)),
        None => Ok(()),
    }
}

fn install() -> Result<(), String> {
    use tokio::signal::unix::{SignalKind, signal};
    let failed = |e: std::io::Error| format!("cannot listen for signals: {e}");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(failed)?;
    // Registered before this returns, so that a signal that comes as the command starts is not
    // lost to the default action.
    let (mut interrupt, mut terminate) = {
        let _inside = runtime.enter();
        (signal(SignalKind::interrupt()).map_err(failed)?, signal(SignalKind::terminate()).map_err(failed)?)
    };
    std::thread::Builder::new()
        .name("warrant-signals".into())
        .spawn(move || {
            runtime.block_on(async {
                loop {
                    let signal = tokio::select! {
                        _ = interrupt.recv() => SIGINT,
                        _ = terminate.recv() => SIGTERM,
                    };
                    if RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst).is_err() {
                        // The second: at once, as a kill would.
                        std::process::exit(128 + signal);
                    }
                    STOP.store(true, Ordering::SeqCst);
                    // Also how whoever sent it knows it arrived (signals that come together may
                    // be taken as one): a second one sent after this line stops at once.
                    eprintln!("warrant: stopping after the current step (signal {signal}; another stops at once)");
                }
            });
        })
        .map_err(failed)?;
    Ok(())
}
