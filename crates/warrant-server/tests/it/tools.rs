//! `GET /v1/tools` over a real socket: the contract's operations as tool definitions in each
//! format, the JSON `warrant tools` prints for the same contract (warrant-core's generator), the
//! same for every tenant; a format that is not one, or a misspelt parameter, refused naming it.

use serde_json::Value;
use warrant_core::tools::{ToolFormat, definitions, render};
use warrant_engine::Engine;

use crate::{Place, contract, http};

#[test]
fn the_service_lists_the_contracts_tools_in_each_format_and_refuses_any_other() {
    let mut place = Place::sqlite();
    let (_, acme) = place.tenant("acme");
    let (_, globex) = place.tenant("globex");
    let server = warrant_server::Running::start(&place.config()).unwrap();
    let (addr, acme, globex) = (server.addr, Some(acme.as_str()), Some(globex.as_str()));
    let setup = Engine::builder().contract_file(contract()).prepare().unwrap();
    let defs = definitions(setup.contract());
    assert!(
        defs.iter().any(|d| d.name == "cancel_pending_order"),
        "{:?}",
        defs.iter().map(|d| &d.name).collect::<Vec<_>>()
    );

    for name in ["openai", "anthropic", "mcp"] {
        let expected = render(&defs, ToolFormat::parse(name).unwrap());
        let path = format!("/v1/tools?format={name}");
        let (status, listed) = http(addr, "GET", &path, acme, None);
        assert_eq!(status, 200, "{name}: {listed}");
        assert_eq!(listed, expected, "{name}");
        let (_, other) = http(addr, "GET", &path, globex, None);
        assert_eq!(other, expected, "{name}: another tenant, the same contract");
    }
    let (status, default) = http(addr, "GET", "/v1/tools", acme, None);
    assert_eq!((status, default), (200, render(&defs, ToolFormat::Mcp)), "the default is `warrant tools`'s");

    for (path, field, word) in [
        ("/v1/tools?format=gemini", "format", "gemini"),
        ("/v1/tools?format=OpenAI", "format", "OpenAI"),
        ("/v1/tools?format=", "format", "``"),
        ("/v1/tools?formats=mcp", "formats", "formats"),
    ] {
        let (status, error) = http(addr, "GET", path, acme, None);
        assert_eq!(status, 400, "{path}: {error}");
        assert_eq!(
            (&error["error"]["code"], &error["error"]["field"]),
            (&Value::from("invalid_input"), &Value::from(field))
        );
        assert!(error["error"]["message"].as_str().unwrap().contains(word), "{path}: {error}");
    }
    let (status, error) = http(addr, "GET", "/v1/tools?format=mcp", None, None);
    assert_eq!((status, &error["error"]["code"]), (401, &Value::from("unauthorized")), "{error}");
}
