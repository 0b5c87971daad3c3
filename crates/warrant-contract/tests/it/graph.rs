//! The module graph of a crate (warrant-contract's and warrant-core's: both test binaries include
//! this file), checked for import cycles twice: once with every module a node, once with every
//! top-level module (a folder and all it holds) one node, so that folders show layers.
//!
//! The check reads every `src/**/*.rs`, takes each path a module names (`crate::…`, `super::…`,
//! `self::…`, and in `use` items a bare name of one of its own child modules), resolves it to the
//! longest module it starts with, and fails naming the modules of every cycle. A path into
//! another crate (`warrant_contract::…` from core) is no edge: crates are layered by Cargo.
//!
//! Every module is a node of its own: a parent and its children are *not* one concern here, so a
//! child that uses what its parent defines while the parent re-exports the child is a cycle. A
//! `#[cfg(test)] mod tests` at the end of a file is the node `MODULE::tests` (a child of the module
//! it tests), so a unit test may load a contract without the module depending on the contract;
//! at folder level it is `TOP::tests`, apart from its folder for the same reason.
//! A path through the crate root (`crate::Contract`) resolves to the root, which re-exports
//! everything: inside the crate, every path names the module that defines what it uses.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`""` is the crate root, `turn::decide` a child of `turn`) → its source text.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut files = Vec::new();
    walk(src, &mut files);
    let mut out = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> =
            relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        if parts.last().is_some_and(|last| last == "mod" || last == "lib") {
            parts.pop();
        }
        // Reading fixtures is what tests may do (the crates' clippy.toml forbid it elsewhere).
        #[allow(clippy::disallowed_methods)]
        let text = std::fs::read_to_string(&file).unwrap();
        out.insert(parts.join("::"), text);
    }
    out
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    // Listing the source tree is a test's IO, as above.
    #[allow(clippy::disallowed_methods)]
    let entries = std::fs::read_dir(dir).unwrap();
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Splits a module's text into its own code and that of a trailing `#[cfg(test)] mod tests`,
/// without comments.
fn split_tests(module: &str, text: &str) -> Vec<(String, String)> {
    let mut own = String::new();
    let mut tests = String::new();
    let mut in_tests = false;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        if !in_tests && code.trim_start().starts_with("mod tests") {
            in_tests = true;
        }
        let target = if in_tests { &mut tests } else { &mut own };
        target.push_str(code);
        target.push('\n');
    }
    let mut out = vec![(module.to_owned(), own)];
    if in_tests {
        out.push((join(module, "tests"), tests));
    }
    out
}

fn join(parent: &str, child: &str) -> String {
    if parent.is_empty() { child.to_owned() } else { format!("{parent}::{child}") }
}

fn parent(module: &str) -> String {
    module.rsplit_once("::").map(|(p, _)| p.to_owned()).unwrap_or_default()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path in `code`, as its segments, braces of `use` items expanded one level per group.
fn paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !is_ident(chars[i - 1]) && chars[i - 1] != ':';
        if starts_word && is_ident(chars[i]) {
            let (found, next) = path_at(&chars, i);
            out.extend(found.into_iter().filter(|path| path.len() > 1));
            i = next.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// The path (or paths, for a brace group) starting at `start`, and the index after it.
fn path_at(chars: &[char], start: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    let mut i = start;
    loop {
        let begin = i;
        while i < chars.len() && is_ident(chars[i]) {
            i += 1;
        }
        if i == begin {
            break;
        }
        prefix.push(chars[begin..i].iter().collect::<String>());
        if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
            i += 2;
            if chars.get(i) == Some(&'{') {
                let mut out = Vec::new();
                i += 1;
                loop {
                    while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                        i += 1;
                    }
                    match chars.get(i) {
                        None => return (out, i),
                        Some('}') => return (out, i + 1),
                        _ => {}
                    }
                    let (inner, next) = path_at(chars, i);
                    for path in inner {
                        out.push(prefix.iter().cloned().chain(path).collect());
                    }
                    // A `*` (or anything that is no path) is stepped over.
                    i = next.max(i + 1);
                }
            }
        } else {
            break;
        }
    }
    (vec![prefix], i)
}

/// The module `path`, named inside `from`, resolves to (the longest known module it starts with).
fn resolve(from: &str, path: &[String], known: &BTreeSet<String>, in_use: bool) -> Option<String> {
    let (mut base, rest) = match path.first().map(String::as_str) {
        Some("crate") => (String::new(), &path[1..]),
        Some("super") => {
            let mut base = parent(from);
            let mut rest = &path[1..];
            while rest.first().is_some_and(|s| s == "super") {
                base = parent(&base);
                rest = &rest[1..];
            }
            (base, rest)
        }
        Some("self") => (from.to_owned(), &path[1..]),
        Some(first) if in_use && known.contains(&join(from, first)) => (from.to_owned(), path),
        _ => return None,
    };
    let mut found = base.clone();
    for segment in rest {
        base = join(&base, segment);
        if known.contains(&base) {
            found = base.clone();
        } else {
            break;
        }
    }
    Some(found)
}

/// The crate's module graph: each module (`MODULE::tests` apart) to the modules it names.
pub fn module_edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut nodes: Vec<(String, String)> = Vec::new();
    for (module, text) in modules(src) {
        nodes.extend(split_tests(&module, &text));
    }
    let known: BTreeSet<String> = nodes.iter().map(|(m, _)| m.clone()).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in &nodes {
        let targets = edges.entry(module.clone()).or_default();
        for statement in code.split(';') {
            let trimmed = statement.trim_start();
            let in_use = trimmed.starts_with("use ") || trimmed.starts_with("pub use ") || trimmed.starts_with("pub(");
            for path in paths(statement) {
                if let Some(target) = resolve(module, &path, &known, in_use)
                    && &target != module
                {
                    targets.insert(target);
                }
            }
        }
    }
    edges
}

/// The same graph with every top-level module one node (a folder and all it holds), each
/// `tests` module apart as `TOP::tests`.
pub fn folder_edges(edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    fn folder(module: &str) -> String {
        let top = module.split("::").next().unwrap_or_default();
        if module.ends_with("::tests") { join(top, "tests") } else { top.to_owned() }
    }
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in edges {
        let from = folder(from);
        let entry = out.entry(from.clone()).or_default();
        entry.extend(targets.iter().map(|to| folder(to)).filter(|to| *to != from));
    }
    out
}

/// Every cycle of `edges`, described with the edges inside it (empty: none).
pub fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    strongly_connected(edges)
        .iter()
        .map(|cycle| {
            let names: Vec<String> =
                cycle.iter().map(|m| if m.is_empty() { "(crate root)".to_owned() } else { m.clone() }).collect();
            let inside: Vec<String> = cycle
                .iter()
                .flat_map(|from| {
                    edges[from].iter().filter(|to| cycle.contains(*to)).map(move |to| format!("{from} -> {to}"))
                })
                .collect();
            format!("{{{}}} through {}", names.join(", "), inside.join(", "))
        })
        .collect()
}

/// The `src` folder of the crate under test.
pub fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn strongly_connected(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a str) {
        let n = state.index.len();
        state.index.insert(node, n);
        state.low.insert(node, n);
        state.stack.push(node);
        state.on_stack.insert(node);
        let edges = state.edges;
        for next in edges.get(node).into_iter().flatten() {
            let next = next.as_str();
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = BTreeSet::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.insert(top.to_owned());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                state.out.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(&mut state, node);
        }
    }
    state.out
}
