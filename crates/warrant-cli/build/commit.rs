//! The git commit a build of `warrant` comes from, for `warrant --version`: shared by the build
//! script and the tests, which run it against repositories of their own.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the version says where no commit can be known: a build from a tarball or a registry
/// without `.git`, a machine without git, or a folder git will not read.
pub const UNKNOWN: &str = "unknown";

/// `git` in `dir`, with the variables that would point it at another repository removed (a build
/// run from inside a git hook inherits them); its standard output, trimmed, when it succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    // `--no-optional-locks`: `git status` would otherwise write the refreshed index, and the
    // index is one of the files whose change runs the build script again (and rebuilds the
    // binary): one build would make the next one rebuild.
    let out = Command::new("git")
        .arg("--no-optional-locks")
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The first 12 hex digits of the commit checked out at `root`, with `+dirty` when a tracked
/// file differs from it (staged or not; untracked files do not count), or [`UNKNOWN`]. Only a
/// repository whose top level is `root` itself counts: a tarball unpacked inside some other
/// repository is not that repository's commit.
pub fn describe(root: &Path) -> String {
    let Some(top) = git(root, &["rev-parse", "--show-toplevel"]) else { return UNKNOWN.to_owned() };
    let same = |a: &Path, b: &Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
    if !same(Path::new(&top), root) {
        return UNKNOWN.to_owned();
    }
    let Some(commit) = git(root, &["rev-parse", "--short=12", "HEAD"]) else { return UNKNOWN.to_owned() };
    match git(root, &["status", "--porcelain", "--untracked-files=no"]) {
        Some(changes) if changes.is_empty() => commit,
        Some(_) => format!("{commit}+dirty"),
        // The commit is known but not whether the tree matches it: say so rather than guess.
        None => format!("{commit}+unknown"),
    }
}

/// The files whose change can change [`describe`]'s answer, those that exist: the checked-out
/// HEAD and its log (every commit, checkout or reset appends to it), the index (`git add`), the
/// branch HEAD names and the packed refs. Not all the branches: in a repository with worktrees
/// they are shared, and another worktree's commit must not rebuild this one's binary.
pub fn watched(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let path = |args: &[&str]| git(root, args).map(|p| root.join(p));
    if let Some(dir) = path(&["rev-parse", "--git-dir"]) {
        files.push(dir.join("HEAD"));
        files.push(dir.join("logs/HEAD"));
        files.push(dir.join("index"));
    }
    if let Some(common) = path(&["rev-parse", "--git-common-dir"]) {
        files.push(common.join("packed-refs"));
        if let Some(branch) = git(root, &["symbolic-ref", "-q", "HEAD"]) {
            files.push(common.join(branch));
        }
    }
    // A missing file would make cargo run the build script on every build.
    files.retain(|f| f.exists());
    files
}
