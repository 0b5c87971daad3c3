//! `warrant --version`: the package's version and the commit the binary was built from, read by
//! `build.rs` through `build/commit.rs`, which these tests also run against repositories of
//! their own (clean, dirty, untracked files only, not a repository, inside another one).

#[path = "../../build/commit.rs"]
mod commit;

use std::path::Path;
use std::process::Command;

use crate::{root, warrant};

fn git(dir: &Path, args: &[&str]) -> String {
    let config = ["user.name=warrant tests", "user.email=tests@warrant.invalid", "init.defaultBranch=main"];
    let out = Command::new("git")
        .args(config.iter().flat_map(|c| ["-c", c]))
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap_or_else(|e| panic!("`git` is missing ({e}): these tests need git on the path"));
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn the_version_names_the_commit_the_binary_was_built_from() {
    for flag in ["--version", "-V"] {
        let out = warrant(&[flag], "");
        assert!(out.status.success(), "{out:?}");
        let printed = String::from_utf8(out.stdout).unwrap();
        let inner = printed
            .trim_end()
            .strip_prefix(&format!("warrant {} (", env!("CARGO_PKG_VERSION")))
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("not `warrant VERSION (COMMIT)`: {printed:?}"));
        // A checkout's commit is what HEAD is now (the build script runs again when HEAD moves);
        // whether the tree was dirty at build time is the build's to know.
        let expected = commit::describe(&root());
        if expected == commit::UNKNOWN {
            assert_eq!(inner, commit::UNKNOWN);
        } else {
            let head = git(&root(), &["rev-parse", "--short=12", "HEAD"]);
            assert!(inner == head || inner == format!("{head}+dirty"), "{inner:?} is not {head}[+dirty]");
        }
    }
}

#[test]
fn a_commit_is_described_clean_dirty_or_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    // Not a repository (a tarball): unknown, never an error.
    assert_eq!(commit::describe(&repo), commit::UNKNOWN);
    assert!(commit::watched(&repo).is_empty());

    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("Cargo.toml"), "[workspace]\n").unwrap();
    // A repository without a commit has no commit to name.
    assert_eq!(commit::describe(&repo), commit::UNKNOWN);
    git(&repo, &["add", "Cargo.toml"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let head = git(&repo, &["rev-parse", "--short=12", "HEAD"]);
    assert_eq!(head.len(), 12);
    assert_eq!(commit::describe(&repo), head);
    let watched = commit::watched(&repo);
    for file in ["HEAD", "index", "logs/HEAD", "refs/heads/main"] {
        assert!(watched.contains(&repo.join(".git").join(file)), "{file} is not watched: {watched:?}");
    }

    // Untracked files do not make a tree dirty; a changed tracked file does, staged or not.
    std::fs::write(repo.join("notes.txt"), "scratch").unwrap();
    assert_eq!(commit::describe(&repo), head);
    std::fs::write(repo.join("Cargo.toml"), "[workspace]\nmembers = []\n").unwrap();
    assert_eq!(commit::describe(&repo), format!("{head}+dirty"));
    git(&repo, &["add", "Cargo.toml"]);
    assert_eq!(commit::describe(&repo), format!("{head}+dirty"));
    git(&repo, &["commit", "-q", "-m", "second"]);
    let second = git(&repo, &["rev-parse", "--short=12", "HEAD"]);
    assert_ne!(second, head);
    assert_eq!(commit::describe(&repo), second);

    // A folder inside another repository (a tarball unpacked in someone's checkout) is not
    // that repository's commit.
    let inner = repo.join("vendor/warrant");
    std::fs::create_dir_all(&inner).unwrap();
    assert_eq!(commit::describe(&inner), commit::UNKNOWN);
}
