//! The `[mcp]` section: what of an MCP downstream besides its tools the gateway passes through
//! for the contract's actors, resources by URI pattern and prompts by name, as operations
//! declare the tools; and the source kind what they return is recorded as, so that later checks
//! can point into it. Nothing undeclared is listed or read.

use serde::Deserialize;
use toml::Spanned;

use super::{ContractError, ContractErrorKind, Locator};
use crate::source::SourceKinds;
use crate::text;

/// The resources and prompts the gateway passes through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpDeclared {
    /// URI patterns: `*` stands for any run of characters, every other character for itself.
    pub resources: Vec<String>,
    /// Prompt names, or patterns as for resources.
    pub prompts: Vec<String>,
    /// The source kind of what a resource read or a prompt returns, on the record.
    pub source: Option<String>,
}

impl McpDeclared {
    /// Whether the resource at `uri` (or the URI template `uri`) is declared.
    pub fn resource(&self, uri: &str) -> bool {
        self.resources.iter().any(|p| matches(p, uri))
    }

    /// Whether the prompt `name` is declared.
    pub fn prompt(&self, name: &str) -> bool {
        self.prompts.iter().any(|p| matches(p, name))
    }
}

/// Whether `text` is what `pattern` describes, `*` standing for any run of characters.
fn matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else { return text.is_empty() };
    let Some(mut rest) = text.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMcp {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    prompts: Vec<String>,
    source: Option<Spanned<String>>,
}

pub(super) fn compile(
    at: &Locator<'_>,
    raw: Option<&RawMcp>,
    kinds: &SourceKinds,
) -> Result<McpDeclared, ContractError> {
    let Some(raw) = raw else { return Ok(McpDeclared::default()) };
    let source = match &raw.source {
        None => None,
        Some(kind) if kinds.get(kind.get_ref()).is_some() => Some(kind.get_ref().clone()),
        Some(kind) => {
            return Err(
                at.error(kind.span().start, ContractErrorKind::UndeclaredMcpKind(text::visible(kind.get_ref())))
            );
        }
    };
    Ok(McpDeclared { resources: raw.resources.clone(), prompts: raw.prompts.clone(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_stands_for_any_run_and_nothing_else_is_loose() {
        assert!(matches("test://static/resource/*", "test://static/resource/1"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "abc") && matches("a*b*c", "a-b-b-c"));
        assert!(!matches("a*b*c", "a-c") && !matches("a*bc", "abcx"));
        assert!(matches("simple_prompt", "simple_prompt") && !matches("simple_prompt", "simple_prompt2"));
        assert!(!matches("ab*ba", "aba"), "the two ends may not overlap");
        let declared = McpDeclared { resources: vec!["file:///*".into()], prompts: vec![], source: None };
        assert!(declared.resource("file:///etc/x") && !declared.resource("https://x") && !declared.prompt("p"));
    }
}
