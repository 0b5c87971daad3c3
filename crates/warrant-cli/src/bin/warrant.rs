//! The `warrant` binary: the command line of the library (`warrant_cli::run`, in `../main.rs`)
//! on the process's main thread, on mimalloc.

use std::process::ExitCode;

/// The allocator: a turn allocates many small values, which mimalloc serves at a fraction of
/// glibc malloc's cost (the deterministic turn of `crates/warrant-core/benches/turn.rs` runs on
/// the system allocator, the same turn in `crates/warrant-engine/benches/turn.rs` on this one).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    ExitCode::from(warrant_cli::run(std::env::args_os()))
}
