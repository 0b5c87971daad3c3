//! Every bad contract under `corpus/contracts` fails to load with the line, column and message
//! its first line names (and the file, for an error in a policy file beside it); the examples
//! load.

use warrant_core::contract::ContractFiles;

use crate::{load, root};

/// The companion files of the bad contracts: the files beside them.
struct Beside;

impl ContractFiles for Beside {
    fn read(&self, path: &str) -> Result<String, String> {
        std::fs::read_to_string(root().join("corpus/contracts").join(path)).map_err(|e| e.to_string())
    }
}

#[test]
fn each_bad_contract_is_refused_at_the_place_it_names() {
    let dir = root().join("corpus/contracts");
    let mut entries: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    let mut checked = 0;
    for path in entries.iter().filter(|p| p.extension().is_some_and(|e| e == "toml")) {
        let text = std::fs::read_to_string(path).unwrap();
        let header = text.lines().next().unwrap();
        let expected = header
            .strip_prefix("# expect-error: ")
            .unwrap_or_else(|| panic!("{} lacks an `# expect-error:` first line", path.display()));
        let (place, message) = expected.split_once(": ").unwrap_or((expected.trim_end_matches(':'), ""));
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        // `file:line:column` names a companion file at fault; `line:column` the contract itself.
        let (origin, place) = match place.split_once(':') {
            Some((file, rest)) if !file.chars().all(|c| c.is_ascii_digit()) => (file.to_owned(), rest),
            _ => (name.clone(), place),
        };
        let error =
            warrant_core::Contract::load(&name, &text, &Beside).expect_err(&format!("{name} loaded but must not"));
        let shown = error.to_string();
        assert_eq!(
            (error.origin.as_str(), format!("{}:{}", error.line, error.column)),
            (origin.as_str(), place.to_owned()),
            "{name}: {shown}"
        );
        assert!(shown.starts_with(&format!("{origin}:{place}: ")), "{shown}");
        assert!(shown.contains(message), "{name}: `{shown}` does not say `{message}`");
        assert!(!shown.contains('\n'), "{name}: the message is more than one line: {shown}");
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} bad contracts checked");
}

#[test]
fn the_examples_load() {
    let ko = load("examples/score-ko/contract.toml");
    let ops: Vec<&str> = ko.score().clauses().iter().map(|c| c.op()).collect();
    assert_eq!(ops, ["join", "reserve", "undertake", "delegate"]);
    let en = load("examples/score-en/contract.toml");
    assert_eq!(en.score().clauses().len(), 4);
}
