//! Tool definitions from the contract: the operations an agent may propose as tool calls (their
//! `from` names the contract's act kind), each with a JSON Schema of its arguments made from
//! their kinds. The same definitions are printed for function calling (`warrant tools --format
//! openai|anthropic|mcp`) and listed by the MCP gateway's `tools/list` and handed out by the Python
//! `Gate.tools`, so what a model is offered is what the contract checks. Pure: no IO.

use serde_json::{Map, Value, json};
use warrant_contract::contract::Contract;
use warrant_contract::operation::{Arg, ArgKind, Operation};

/// The three shapes of a tool list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    /// OpenAI chat completions: `[{"type":"function","function":{name,description,parameters}}]`.
    OpenAi,
    /// Anthropic messages: `[{name,description,input_schema}]`.
    Anthropic,
    /// An MCP `tools/list` result: `{"tools":[{name,description,inputSchema,annotations}]}`.
    Mcp,
}

impl ToolFormat {
    /// The formats' names as an error message lists them.
    pub const CHOICES: &'static str = "openai, anthropic or mcp";

    /// The format named `name` (`openai`, `anthropic` or `mcp`); anything else is `None`.
    pub fn parse(name: &str) -> Option<ToolFormat> {
        match name {
            "openai" => Some(ToolFormat::OpenAi),
            "anthropic" => Some(ToolFormat::Anthropic),
            "mcp" => Some(ToolFormat::Mcp),
            _ => None,
        }
    }
}

/// One operation as a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// The operation's name.
    pub name: String,
    /// What the tool does, for the model: generated from the declaration.
    pub description: String,
    /// The arguments' JSON Schema (an object schema, closed).
    pub input_schema: Map<String, Value>,
    /// Whether a call needs the user's confirmation before it commits.
    pub consequential: bool,
    /// Whether a committed call changes no record.
    pub read_only: bool,
}

/// The operations of `contract` that an agent may propose as tool calls, in declaration order.
/// A contract without an act kind (`sources.acts`) offers none.
pub fn definitions(contract: &Contract) -> Vec<ToolDef> {
    let Some(kind) = contract.act_kind().and_then(|name| contract.kinds().get(name)) else {
        return Vec::new();
    };
    let currency = contract.currency().map(|c| c.code().to_owned());
    contract
        .operations()
        .iter()
        .filter(|op| op.from.contains(kind))
        .map(|op| definition(op, currency.as_deref()))
        .collect()
}

fn definition(op: &Operation, currency: Option<&str>) -> ToolDef {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for arg in &op.args {
        properties.insert(arg.name.clone(), Value::Object(arg_schema(arg, currency)));
        if !arg.optional {
            required.push(Value::String(arg.name.clone()));
        }
    }
    let input_schema = match json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    }) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let read_only = op.effects.is_empty();
    let description = if op.consequential {
        format!("`{}`: performed only after the user confirms these exact arguments.", op.name)
    } else if read_only {
        format!("`{}`: reads records, changes none.", op.name)
    } else {
        format!("`{}`: changes records once its checks pass.", op.name)
    };
    ToolDef { name: op.name.clone(), description, input_schema, consequential: op.consequential, read_only }
}

/// The schema of one argument, from its kind.
fn arg_schema(arg: &Arg, currency: Option<&str>) -> Map<String, Value> {
    let id = |what: String| json!({"type": "string", "minLength": 1, "description": what});
    let schema = match &arg.kind {
        ArgKind::Enum { values, .. } => json!({"type": "string", "enum": values}),
        ArgKind::Record { table } => id(format!("the key of a `{table}` row")),
        ArgKind::Records { table, pairs_with, .. } => {
            let mut what = format!("keys of `{table}` rows");
            if let Some(other) = pairs_with {
                what.push_str(&format!(", one for each element of `{other}`, in its order"));
            }
            json!({"type": "array", "items": {"type": "string", "minLength": 1}, "description": what})
        }
        ArgKind::Member { of, path, .. } => id(format!("an id in `{path}` of `{of}`")),
        ArgKind::Members { of, path, .. } => json!({
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "description": format!("ids in `{path}` of `{of}`, as often as each occurs"),
        }),
        ArgKind::Text { allow_empty } => {
            let least = if *allow_empty { 0 } else { 1 };
            json!({"type": "string", "minLength": least, "description": "the user's own words"})
        }
        ArgKind::String { max_length, pattern, values } => {
            let mut schema = Map::new();
            schema.insert("type".into(), json!("string"));
            schema.insert("description".into(), json!("text the model composes"));
            if let Some(most) = max_length {
                schema.insert("maxLength".into(), json!(most));
            }
            if let Some(pattern) = pattern {
                // warrant anchors a pattern at both ends; a JSON Schema pattern is unanchored.
                schema.insert("pattern".into(), json!(format!("^(?:{})$", pattern.source)));
            }
            if let Some(values) = values {
                schema.insert("enum".into(), json!(values));
            }
            Value::Object(schema)
        }
        ArgKind::Date if arg.plain => json!({
            "type": "string",
            "description": "a date, YYYY-MM-DD, or a date expression (docs/dates.md)",
        }),
        ArgKind::Date => json!({
            "type": "object",
            "description": "a date expression: {\"date\":\"YYYY-MM-DD\"} or a relative form (docs/dates.md)",
        }),
        ArgKind::Money if arg.plain => json!({"type": "number", "description": "an amount, exact in its minor units"}),
        ArgKind::Money => money_schema(currency),
        ArgKind::Integer { min, max } => json!({"type": "integer", "minimum": min, "maximum": max}),
        ArgKind::Bool => json!({"type": "boolean"}),
        ArgKind::Objects { fields, min_items, max_items } => {
            let properties: Map<String, Value> =
                fields.iter().map(|f| (f.name.clone(), Value::Object(arg_schema(f, currency)))).collect();
            let required: Vec<&str> = fields.iter().filter(|f| !f.optional).map(|f| f.name.as_str()).collect();
            let mut schema = json!({
                "type": "array",
                "items": {"type": "object", "properties": properties, "required": required, "additionalProperties": false},
                "minItems": min_items,
            });
            if let (Some(most), Value::Object(map)) = (max_items, &mut schema) {
                map.insert("maxItems".into(), json!(most));
            }
            schema
        }
    };
    match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// `{"amount":"12.50","currency":"USD"}`: the amount a decimal string, never a float.
fn money_schema(currency: Option<&str>) -> Value {
    let currency = match currency {
        Some(code) => json!({"type": "string", "const": code}),
        None => json!({"type": "string", "pattern": "^[A-Z]{3}$"}),
    };
    json!({
        "type": "object",
        "properties": {
            "amount": {"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]+)?$"},
            "currency": currency,
        },
        "required": ["amount", "currency"],
        "additionalProperties": false,
    })
}

/// The definitions in `format`'s shape.
pub fn render(defs: &[ToolDef], format: ToolFormat) -> Value {
    let tools = defs.iter().map(|def| match format {
        ToolFormat::OpenAi => json!({
            "type": "function",
            "function": {"name": def.name, "description": def.description, "parameters": def.input_schema},
        }),
        ToolFormat::Anthropic => {
            json!({"name": def.name, "description": def.description, "input_schema": def.input_schema})
        }
        ToolFormat::Mcp => json!({
            "name": def.name,
            "description": def.description,
            "inputSchema": def.input_schema,
            "annotations": {
                "readOnlyHint": def.read_only,
                "destructiveHint": !def.read_only,
                "idempotentHint": def.read_only,
                "openWorldHint": false,
            },
        }),
    });
    match format {
        ToolFormat::Mcp => json!({"tools": tools.collect::<Vec<_>>()}),
        _ => Value::Array(tools.collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warrant_contract::contract::ContractFiles;

    const CONTRACT: &str = r#"
[sources]
kinds = ["user", "agent", "clerk"]
acts = "agent"

[actor]
table = "member"

[records]
currency = "EUR"

[policies]
files = ["policy.cedar"]

[[records.table]]
name = "member"
entity = "Member"
file = "members.json"

[[operation]]
name = "book"
consequential = true
args.who = { kind = "record", table = "member" }
args.plan = { kind = "enum", values = ["basic", "plus"] }
args.day = { kind = "date" }
args.deposit = { kind = "money" }
args.note = { kind = "text", allow_empty = true }
args.slots = { kind = "integer", min = 1, max = 3 }
args.urgent = { kind = "bool", optional = true }
args.cards = { kind = "members", of = "actor", path = "cards" }
args.friends = { kind = "records", table = "member" }
args.subject = { kind = "string", max_length = 80, pattern = "[A-Z].*" }

[[operation.effect]]
arg = "plan"
set = "actor.plan"

[[operation]]
name = "look"
args.who = { kind = "record", table = "member" }

[[operation]]
name = "clerk_only"
from = ["clerk"]
"#;

    struct Files;
    impl ContractFiles for Files {
        fn read(&self, path: &str) -> Result<String, String> {
            if path == "policy.cedar" { Ok("permit (principal, action, resource);".into()) } else { Err(path.into()) }
        }
    }

    fn defs() -> Vec<ToolDef> {
        let contract = Contract::load("test.toml", CONTRACT, &Files).unwrap();
        definitions(&contract)
    }

    #[test]
    fn only_what_the_act_kind_may_propose_is_a_tool() {
        let names: Vec<_> = defs().into_iter().map(|d| d.name).collect();
        assert_eq!(names, ["book", "look"]);
    }

    #[test]
    fn each_argument_kind_has_its_schema() {
        let defs = defs();
        let book = &defs[0];
        let props = &book.input_schema["properties"];
        assert_eq!(props["who"]["type"], "string");
        assert_eq!(props["plan"]["enum"], json!(["basic", "plus"]));
        assert_eq!(props["day"]["type"], "object");
        assert_eq!(props["deposit"]["properties"]["currency"]["const"], "EUR");
        assert_eq!(props["deposit"]["properties"]["amount"]["type"], "string");
        assert_eq!(props["note"]["minLength"], 0);
        assert_eq!((props["slots"]["minimum"].clone(), props["slots"]["maximum"].clone()), (json!(1), json!(3)));
        assert_eq!(props["urgent"]["type"], "boolean");
        assert_eq!(props["cards"]["items"]["type"], "string");
        assert_eq!(props["friends"]["type"], "array");
        assert_eq!(props["subject"]["maxLength"], 80);
        assert_eq!(props["subject"]["pattern"], "^(?:[A-Z].*)$");
        let required = book.input_schema["required"].as_array().unwrap();
        assert!(!required.contains(&json!("urgent")) && required.contains(&json!("slots")));
        assert_eq!(book.input_schema["additionalProperties"], false);
        assert!(book.consequential && !book.read_only);
        assert!(defs[1].read_only && !defs[1].consequential);
    }

    #[test]
    fn each_format_has_its_shape() {
        let defs = defs();
        let openai = render(&defs, ToolFormat::OpenAi);
        assert_eq!(openai[0]["type"], "function");
        assert_eq!(openai[0]["function"]["name"], "book");
        assert_eq!(openai[0]["function"]["parameters"]["type"], "object");
        let anthropic = render(&defs, ToolFormat::Anthropic);
        assert_eq!(anthropic[1]["name"], "look");
        assert_eq!(anthropic[1]["input_schema"]["required"], json!(["who"]));
        let mcp = render(&defs, ToolFormat::Mcp);
        assert_eq!(mcp["tools"][0]["inputSchema"]["properties"]["plan"]["enum"], json!(["basic", "plus"]));
        assert_eq!(mcp["tools"][0]["annotations"]["destructiveHint"], true);
        assert_eq!(mcp["tools"][1]["annotations"]["readOnlyHint"], true);
        assert_eq!(ToolFormat::parse("mcp"), Some(ToolFormat::Mcp));
        assert_eq!(ToolFormat::parse("gemini"), None);
    }
}
