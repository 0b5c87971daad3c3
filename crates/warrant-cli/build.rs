//! Puts the git commit the binary is built from into `warrant --version` (`WARRANT_COMMIT`):
//! `abcdef012345`, with `+dirty` when tracked files differ from it, or `unknown` where no commit
//! can be known (a build from a tarball without `.git`, no git). It never fails a build.
//! `WARRANT_BUILD_COMMIT` set at build time is used as it is (a packager building from a
//! tarball knows the commit).

#[path = "build/commit.rs"]
mod commit;

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-env-changed=WARRANT_BUILD_COMMIT");
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default();
    let root = Path::new(&manifest).join("../..");
    let described = match std::env::var("WARRANT_BUILD_COMMIT") {
        Ok(given) if !given.trim().is_empty() => given.trim().to_owned(),
        _ => commit::describe(&root),
    };
    // Run again when the commit or the index moves, and when a source file of the workspace
    // changes (which rebuilds this binary anyway): an edit makes the tree dirty before it is
    // staged. Not the whole tree: tests write caches beside their sources (`__pycache__`), and
    // a file they write must not rebuild the binary.
    for file in commit::watched(&root) {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    for manifest in ["Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(manifest).display());
    }
    if let Ok(crates) = std::fs::read_dir(root.join("crates")) {
        for entry in crates.flatten() {
            println!("cargo:rerun-if-changed={}", entry.path().join("src").display());
            println!("cargo:rerun-if-changed={}", entry.path().join("Cargo.toml").display());
        }
    }
    println!("cargo:rustc-env=WARRANT_COMMIT={described}");
}
