//! Several downstream MCP servers behind one gateway: the file that names them
//! (`warrant mcp --downstreams FILE`) and which server's tool each operation is.
//!
//! Each operation is one server's tool, so that a call is forwarded to that server alone: an
//! operation is the tool of its own name on the one server that lists it, or the tool a
//! server's `tools` table maps it to. Two servers' tools of the same name are two operations
//! of the contract, each mapped to its server's tool in that server's table; a server with a
//! table offers only the operations its table names.

use std::collections::BTreeMap;

use serde::Deserialize;
use warrant_core::tools::ToolDef;

use crate::DownstreamAt;

/// One downstream server: its name (for the reports and the record), where it is, and which
/// operations its tools are.
#[derive(Debug, Clone)]
pub struct DownstreamSpec {
    /// The name the file gives it.
    pub name: String,
    /// Where it is.
    pub at: DownstreamAt,
    /// A command's environment, beside the gateway's.
    pub env: BTreeMap<String, String>,
    /// The variable whose value is a URL's bearer token.
    pub token_env: String,
    /// Operation to tool name; `None`: every operation is the tool of its own name.
    pub tools: Option<BTreeMap<String, String>>,
}

impl DownstreamSpec {
    /// The one downstream of `--downstream-stdio` or `--downstream-url`.
    pub fn single(at: DownstreamAt) -> DownstreamSpec {
        DownstreamSpec {
            name: "downstream".into(),
            at,
            env: BTreeMap::new(),
            token_env: crate::ENV_DOWNSTREAM_TOKEN.into(),
            tools: None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    downstream: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: toml::Spanned<String>,
    command: Option<Vec<String>>,
    url: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    token_env: Option<String>,
    tools: Option<toml::Spanned<BTreeMap<String, String>>>,
}

/// The downstreams a configuration file names, in its order; an error names the line and the
/// field at fault.
pub fn parse(text: &str) -> Result<Vec<DownstreamSpec>, String> {
    let file: File = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_owned())?;
    let line = |at: usize| text.get(..at).map_or(1, |before| before.matches('\n').count() + 1);
    if file.downstream.is_empty() {
        return Err("`downstream`: name at least one `[[downstream]]`".into());
    }
    let mut specs: Vec<DownstreamSpec> = Vec::new();
    let mut mapped: BTreeMap<String, String> = BTreeMap::new();
    for entry in file.downstream {
        let (name, at) = (entry.name.get_ref().clone(), line(entry.name.span().start));
        let fail = |field: &str, why: &str| format!("line {at}: downstream `{name}`, `{field}`: {why}");
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(fail("name", "give letters, digits, `_` or `-`"));
        }
        if specs.iter().any(|s| s.name == name) {
            return Err(fail("name", "another downstream has this name"));
        }
        let at_ = match (entry.command, entry.url) {
            (Some(command), None) if !command.is_empty() => DownstreamAt::Command(command),
            (Some(_), None) => return Err(fail("command", "give the program and its arguments")),
            (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => DownstreamAt::Url(url),
            (None, Some(_)) => return Err(fail("url", "give an http:// or https:// URL")),
            (Some(_), Some(_)) => return Err(fail("url", "give `command` or `url`, not both")),
            (None, None) => return Err(fail("command", "give `command` (a child over stdio) or `url`")),
        };
        let tools = match entry.tools {
            Some(table) => {
                let table_line = line(table.span().start);
                for op in table.get_ref().keys() {
                    if let Some(other) = mapped.insert(op.clone(), name.clone()) {
                        return Err(format!(
                            "line {table_line}: downstream `{name}`, `tools.{op}`: operation `{op}` is mapped to downstream `{other}` too"
                        ));
                    }
                }
                Some(table.into_inner())
            }
            None => None,
        };
        let token_env = entry.token_env.unwrap_or_else(|| crate::ENV_DOWNSTREAM_TOKEN.into());
        specs.push(DownstreamSpec { name, at: at_, env: entry.env, token_env, tools });
    }
    Ok(specs)
}

/// One server's part in the match: its name, its `tools` table, the tools it lists.
#[derive(Debug, Clone, Copy)]
pub struct Listing<'a> {
    /// The server's name.
    pub name: &'a str,
    /// Its `tools` table, if it has one.
    pub tools: Option<&'a BTreeMap<String, String>>,
    /// The tool names it listed.
    pub listed: &'a [String],
}

/// Where an offered operation is forwarded: a server (its place in the file) and its tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The server's place among the downstreams.
    pub server: usize,
    /// The server's tool.
    pub tool: String,
}

/// The operations each server's tools are: for a server with a table, the operations it maps
/// to a tool it lists; without one, each tool it lists as the operation of its name.
fn provided(server: &Listing<'_>) -> BTreeMap<String, String> {
    match server.tools {
        Some(table) => {
            table.iter().filter(|(_, tool)| server.listed.contains(tool)).map(|(o, t)| (o.clone(), t.clone())).collect()
        }
        None => server.listed.iter().map(|t| (t.clone(), t.clone())).collect(),
    }
}

/// The contract's tool definitions matched with every server's tools: an operation one server
/// provides is offered and routed there; one that none provides is missing, one that several
/// provide (a name listed by two servers without a table mapping it) is not offered, named.
pub fn route(defs: Vec<ToolDef>, servers: &[Listing<'_>]) -> crate::ToolMatch {
    let mut found = crate::ToolMatch::default();
    let provides: Vec<BTreeMap<String, String>> = servers.iter().map(provided).collect();
    for (server, provides) in servers.iter().zip(&provides) {
        for tool in server.listed {
            let serves = provides.iter().any(|(op, t)| t == tool && defs.iter().any(|d| &d.name == op));
            if !serves {
                found.undeclared.push(if servers.len() == 1 {
                    tool.clone()
                } else {
                    format!("{}/{tool}", server.name)
                });
            }
        }
    }
    for def in defs {
        let at: Vec<(usize, &String)> =
            provides.iter().enumerate().filter_map(|(i, p)| p.get(&def.name).map(|tool| (i, tool))).collect();
        match at.as_slice() {
            [] => found.missing_downstream.push(def.name),
            [(server, tool)] => {
                found.routes.insert(def.name.clone(), Route { server: *server, tool: (*tool).clone() });
                found.offered.push(def);
            }
            several => {
                let names = several.iter().filter_map(|(i, _)| servers.get(*i)).map(|s| s.name.to_owned()).collect();
                found.ambiguous.push((def.name, names));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: String::new(),
            input_schema: serde_json::Map::new(),
            consequential: false,
            read_only: true,
        }
    }

    #[test]
    fn same_named_tools_of_two_servers_are_two_operations_each_routed_to_its_own() {
        let (shop, store) = (["search".to_owned(), "buy".to_owned()], ["search".to_owned()]);
        let table = BTreeMap::from([("store_search".to_owned(), "search".to_owned())]);
        let found = route(
            vec![def("search"), def("buy"), def("store_search"), def("refund")],
            &[
                Listing { name: "shop", tools: None, listed: &shop },
                Listing { name: "store", tools: Some(&table), listed: &store },
            ],
        );
        assert_eq!(found.routes["search"], Route { server: 0, tool: "search".into() });
        assert_eq!(found.routes["store_search"], Route { server: 1, tool: "search".into() });
        assert_eq!(found.routes["buy"], Route { server: 0, tool: "buy".into() });
        assert_eq!(found.missing_downstream, ["refund"]);
        assert!(found.undeclared.is_empty(), "{:?}", found.undeclared);
    }

    #[test]
    fn a_name_two_servers_list_without_a_table_is_not_offered() {
        let both = ["search".to_owned()];
        let found = route(
            vec![def("search")],
            &[Listing { name: "a", tools: None, listed: &both }, Listing { name: "b", tools: None, listed: &both }],
        );
        assert!(found.offered.is_empty());
        assert_eq!(found.ambiguous, [("search".to_owned(), vec!["a".to_owned(), "b".to_owned()])]);
    }

    #[test]
    fn bad_files_are_refused_naming_the_line_and_the_field() {
        let both = "[[downstream]]\nname = \"a\"\ncommand = [\"x\"]\n\n[[downstream]]\nname = \"b\"\ncommand = [\"y\"]\nurl = \"http://h/mcp\"\n";
        assert_eq!(parse(both).unwrap_err(), "line 6: downstream `b`, `url`: give `command` or `url`, not both");
        let twice =
            "[[downstream]]\nname = \"a\"\nurl = \"http://h/mcp\"\n[[downstream]]\nname = \"a\"\ncommand = [\"y\"]\n";
        assert_eq!(parse(twice).unwrap_err(), "line 5: downstream `a`, `name`: another downstream has this name");
        let unknown = "[[downstream]]\nname = \"a\"\ncomand = [\"x\"]\n";
        let error = parse(unknown).unwrap_err();
        assert!(error.contains("line 3") && error.contains("comand"), "{error}");
        let mapped = "[[downstream]]\nname = \"a\"\ncommand = [\"x\"]\ntools = { s = \"t\" }\n[[downstream]]\nname = \"b\"\ncommand = [\"y\"]\ntools = { s = \"u\" }\n";
        assert_eq!(
            parse(mapped).unwrap_err(),
            "line 8: downstream `b`, `tools.s`: operation `s` is mapped to downstream `a` too"
        );
        assert!(parse("").unwrap_err().contains("downstream"));
    }
}
