//! Every bad contract under `corpus/contracts` fails to load with the line, column and message
//! its first line names; the examples load.

use crate::{load, root};

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
        let error = warrant_core::Contract::from_toml(&name, &text).expect_err(&format!("{name} loaded but must not"));
        let shown = error.to_string();
        assert_eq!(format!("{}:{}", error.line, error.column), place, "{name}: {shown}");
        assert!(shown.starts_with(&format!("{name}:{place}: ")), "{shown}");
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
