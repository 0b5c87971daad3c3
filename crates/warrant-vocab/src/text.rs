//! Text shown in messages: the invisible characters that no clause may contain, and a text with
//! each of them written out, so that an error quoting what a user or a model wrote shows what the
//! eye would miss. warrant-core re-exports both as `warrant_core::text::{is_invisible, visible}`.

/// Whether `c` is a character a clause may not contain: controls (`Cc`), and the default
/// ignorable code points of Unicode (zero-width characters, bidirectional controls, variation
/// selectors, tags, fillers), which render as nothing and so would let two clauses that look
/// the same differ, or a reply hide what it says.
pub fn is_invisible(c: char) -> bool {
    let u = u32::from(c);
    matches!(
        u,
        0x0000..=0x001F
            | 0x007F..=0x009F
            | 0x00AD
            | 0x034F
            | 0x061C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFF8
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// `text` with every invisible or control character written as `\u{XXXX}`, so a message that
/// quotes it stays on one line and shows what the eye would miss.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_invisible(c) {
            out.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}
