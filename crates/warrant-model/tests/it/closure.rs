//! warrant-model builds without Cedar, TOML or a word segmenter: what it needs of the decision
//! core is the vocabulary crate alone. Read from the workspace's `Cargo.lock`, from
//! warrant-model's own `[dependencies]` (its dev-dependencies do not ship).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The crates that must stay out of warrant-model's build.
const FORBIDDEN: &[&str] = &["cedar-policy", "toml", "icu_segmenter"];

/// A package of the lock file: its name, version, whether it is a workspace member (no `source`),
/// and its dependencies as the lock writes them (`name` or `name version`).
#[derive(Debug, Default)]
struct Package {
    name: String,
    version: String,
    member: bool,
    dependencies: Vec<String>,
}

fn quoted(line: &str) -> Option<String> {
    let line = line.trim().trim_end_matches(',');
    line.strip_prefix('"')?.strip_suffix('"').map(str::to_owned)
}

fn value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.strip_prefix(key)?.trim_start().strip_prefix('=')?.trim().strip_prefix('"')?.strip_suffix('"')
}

fn lock_packages(lock: &str) -> Vec<Package> {
    let mut packages: Vec<Package> = Vec::new();
    let mut in_dependencies = false;
    for line in lock.lines() {
        if line == "[[package]]" {
            packages.push(Package { member: true, ..Package::default() });
            in_dependencies = false;
            continue;
        }
        let Some(package) = packages.last_mut() else { continue };
        if in_dependencies {
            match quoted(line) {
                Some(dependency) => package.dependencies.push(dependency),
                None => in_dependencies = false,
            }
        } else if let Some(name) = value(line, "name") {
            package.name = name.to_owned();
        } else if let Some(version) = value(line, "version") {
            package.version = version.to_owned();
        } else if line.starts_with("source") {
            package.member = false;
        } else if line.starts_with("dependencies = [") {
            in_dependencies = true;
        }
    }
    packages
}

/// The names under a member's `[dependencies]` (`name.workspace = true` or `name = …`).
fn normal_dependencies(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['.', '=', ' ']).next().unwrap_or_default();
            names.push(name.to_owned());
        }
    }
    names
}

/// Every package the normal build of workspace member `start` compiles. A workspace member's lock entry also
/// lists its dev-dependencies, so a member contributes its manifest's `[dependencies]` instead.
fn closure(root: &Path, start: &str) -> BTreeSet<String> {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap();
    let packages = lock_packages(&lock);
    let mut by_name: BTreeMap<&str, Vec<&Package>> = BTreeMap::new();
    for package in &packages {
        by_name.entry(package.name.as_str()).or_default().push(package);
    }
    let find = |dependency: &str| -> &Package {
        let mut parts = dependency.split(' ');
        let name = parts.next().unwrap_or_default();
        let version = parts.next();
        let candidates = by_name.get(name).unwrap_or_else(|| panic!("`{dependency}` is not in Cargo.lock"));
        match version {
            Some(version) => candidates.iter().find(|p| p.version == version).copied().unwrap(),
            None => {
                assert_eq!(candidates.len(), 1, "`{name}` is locked at more than one version");
                candidates[0]
            }
        }
    };
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    let mut queue: Vec<&Package> = vec![find(start)];
    while let Some(package) = queue.pop() {
        if !seen.insert((package.name.clone(), package.version.clone())) {
            continue;
        }
        if package.member {
            let manifest = root.join("crates").join(&package.name).join("Cargo.toml");
            let manifest = std::fs::read_to_string(&manifest).unwrap();
            let normal = normal_dependencies(&manifest);
            for dependency in &package.dependencies {
                let name = dependency.split(' ').next().unwrap_or_default();
                if normal.iter().any(|n| n == name) {
                    queue.push(find(dependency));
                }
            }
        } else {
            queue.extend(package.dependencies.iter().map(|d| find(d)));
        }
    }
    seen.into_iter().map(|(name, _)| name).collect()
}

#[test]
fn warrant_model_builds_without_cedar_toml_or_icu() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let closure = closure(&root, "warrant-model");
    assert!(closure.contains("warrant-vocab"), "the closure was not read: {closure:?}");
    assert!(closure.contains("reqwest"), "the closure was not read: {closure:?}");
    assert!(!closure.contains("warrant-core"), "warrant-model depends on warrant-core");
    let found: Vec<&&str> = FORBIDDEN.iter().filter(|name| closure.contains(**name)).collect();
    assert!(found.is_empty(), "warrant-model's dependencies compile {found:?}");
}

#[test]
fn the_reader_finds_all_three_in_warrant_core() {
    // The same reader, from warrant-core: the test above can fail.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let closure = closure(&root, "warrant-core");
    for name in FORBIDDEN {
        assert!(closure.contains(*name), "warrant-core compiles {name}: {closure:?}");
    }
    assert!(!closure.contains("proptest"), "a dev-dependency was read as a dependency");
}
