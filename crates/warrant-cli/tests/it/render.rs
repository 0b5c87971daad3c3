//! `warrant render`: the numbered rendering an integrator builds pointers from, from `--text` or
//! standard input, and its numbering is the one pointers are resolved by.

use serde_json::{Value, json};
use warrant_core::pointer::{self, TextPointer};

use crate::{stdout, warrant};

fn render(args: &[&str], stdin: &str) -> Value {
    let output = warrant(&[&["render"], args].concat(), stdin);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let out = stdout(&output);
    assert_eq!(out.lines().count(), 1, "one JSON line: {out}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn the_render_output_s_numbering_round_trips_a_pointer() {
    for text in ["Send it to 12 Main St., Apt 4", "이름을 김으로 바꿔 주세요.", "明日の午後に東京へ行きます。"]
    {
        let rendering = render(&["--text", text], "");
        assert_eq!(rendering["text"], text);
        assert_eq!(rendering["rule"], "uax29");
        let numbered = pointer::numbered(text);
        assert_eq!(rendering["rendered"], numbered.render());
        let words = rendering["words"].as_array().unwrap();
        assert_eq!(words.len(), numbered.len(), "{rendering}");
        for word in words {
            let n = u32::try_from(word["n"].as_u64().unwrap()).unwrap();
            let copy = word["word"].as_str().unwrap();
            let ptr = TextPointer { entry: None, from: n, to: n, copy: Some(copy.to_owned()) };
            let resolved = pointer::resolve(&numbered, &ptr).unwrap();
            assert_eq!((resolved.from, resolved.value), (n, copy), "{text}: word {n}");
        }
    }
}

#[test]
fn render_reads_standard_input_exactly_as_given() {
    let rendering = render(&[], "  Hi,\n  you!\n");
    assert_eq!(rendering["text"], "  Hi,\n  you!\n");
    assert_eq!(rendering["rendered"], "  [1]Hi,\n  [2]you!\n");
    assert_eq!(rendering["words"], json!([{"n": 1, "word": "Hi"}, {"n": 2, "word": "you"}]));
    let empty = render(&["--text", "?!"], "");
    assert_eq!((empty["rendered"].as_str(), empty["words"].as_array().map(Vec::len)), (Some("?!"), Some(0)));
}
