//! Policy (a turn's step after structure and checks; `docs/policy.md`): Cedar decides permit or
//! forbid for (actor, operation, record, context). Policies that forbid carry an `@id("…")`
//! annotation, which becomes the name of the broken rule in the act's reasons. Evaluation that
//! errs fails closed: an erroring policy might have forbidden, so the act is refused, and the
//! refusal names the policy by its `@id`, file and line.
//!
//! Every policy is validated when the contract loads against the schema `policy_schema`
//! generates from it, so a misspelt action or context field stops the load at its place in the
//! `.cedar` file instead of loading a rule that never fires.

use std::collections::BTreeMap;
use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Decision, Entities, Entity, EntityId, EntityTypeName, EntityUid, PolicyId, PolicySet, Request,
    RestrictedExpression, Schema, ValidationError, ValidationMode, ValidationWarning, Validator,
};
use miette::Diagnostic;
use serde_json::Value;
#[cfg(test)]
use serde_json::json;

/// The one member of the JSON object that stands for a Cedar `datetime` in the values handed
/// to [`Policies::decide`] (its value the datetime's text, `2026-11-30T03:00:00.000Z`). No row
/// can hold it: every key of a row that starts with `__` reaches Cedar renamed `___…`.
pub const DATETIME_MARK: &str = "__datetime";

/// A Cedar `datetime` as [`Policies::decide`] reads it: `text` in Cedar's form (`YYYY-MM-DD`,
/// or with `Thh:mm:ss`, optional `.SSS`, and `Z` or `+hhmm`).
pub fn datetime(text: String) -> Value {
    let mut mark = serde_json::Map::new();
    mark.insert(DATETIME_MARK.to_owned(), Value::String(text));
    Value::Object(mark)
}

/// The contract's Cedar policies, merged from its policy files.
#[derive(Debug, Clone, Default)]
pub struct Policies {
    set: PolicySet,
    count: usize,
    /// Where each policy was written, by its id in `set` (`{file index}:{Cedar's id}`), so that
    /// nothing a user reads names a policy by that internal id.
    origins: BTreeMap<String, PolicyOrigin>,
}

/// Where a policy was written: its `@id`, its file as the contract names it, and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyOrigin {
    /// Its `@id("…")` annotation, if it has one.
    pub id: Option<String>,
    /// The policy file, as the contract's `policies.files` names it.
    pub file: String,
    /// The 1-based line its text starts on.
    pub line: u32,
}

impl PolicyOrigin {
    /// How a refusal names it: its `@id`, or `file:line` when it has none.
    pub fn name(&self) -> String {
        match &self.id {
            Some(id) => id.clone(),
            None => format!("{}:{}", self.file, self.line),
        }
    }

    /// How a message names it: its `@id` and where it is written.
    pub fn describe(&self) -> String {
        match &self.id {
            Some(id) => format!("policy `{id}` ({}:{})", self.file, self.line),
            None => format!("the policy at {}:{}", self.file, self.line),
        }
    }
}

/// A policy file to compile: its name as the contract gives it, and its text.
#[derive(Debug, Clone)]
pub(crate) struct PolicyFile {
    pub(crate) name: String,
    pub(crate) text: String,
}

/// Why policy files do not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PolicyLoadError {
    /// A policy file is at fault: which one, the byte offset in its text, and what is wrong.
    At { file: usize, offset: usize, message: String },
    /// Cedar refuses the schema generated from the contract.
    Schema(String),
}

/// An entity in a policy request: its Cedar type, id and attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyEntity {
    /// The Cedar entity type (`User`, `Order`).
    pub entity_type: String,
    /// The entity id (the record key, or the actor id).
    pub id: String,
    /// Its attributes, as a JSON object in Cedar's JSON form.
    pub attrs: Value,
}

/// What policy decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyDecision {
    /// A policy permits and none forbids.
    Permit,
    /// Policies forbid: their `@id` annotations (`file:line` for one without), sorted.
    Forbid(Vec<String>),
    /// No policy permits.
    NoPermit,
    /// Evaluation could not be completed; treated as a refusal. The message names each
    /// erring policy by its `@id`, file and line.
    Error(String),
}

/// Cedar's message on one line.
fn one_line(text: &str) -> String {
    text.replace('\n', " ")
}

/// The byte offset of the first span Cedar labels in `error`, if it labels one.
fn first_offset(error: &dyn Diagnostic) -> Option<usize> {
    error.labels().and_then(|mut labels| labels.next()).map(|label| label.offset())
}

fn with_help(message: String, error: &dyn Diagnostic) -> String {
    match error.help() {
        Some(help) => format!("{message}; {help}"),
        None => message,
    }
}

/// The offset of each policy's text in its file, in Cedar's order (`policy0`, `policy1`, …):
/// the texts occur in the file in that order, so each is looked for after the one before.
fn policy_offsets(text: &str, parsed: &PolicySet) -> BTreeMap<String, usize> {
    let mut ordered: Vec<(usize, String, String)> = parsed
        .policies()
        .map(|p| (p.id().to_string(), p.to_string()))
        .chain(parsed.templates().map(|t| (t.id().to_string(), t.to_string())))
        .map(|(id, body)| (id.strip_prefix("policy").and_then(|n| n.parse().ok()).unwrap_or(usize::MAX), id, body))
        .collect();
    ordered.sort();
    let mut offsets = BTreeMap::new();
    let mut cursor = 0;
    for (_, id, body) in ordered {
        let found = text.get(cursor..).and_then(|rest| rest.find(&body)).map(|i| cursor + i);
        if let Some(at) = found {
            cursor = at + body.len();
        }
        offsets.insert(id, found.unwrap_or(cursor));
    }
    offsets
}

fn line_of(text: &str, offset: usize) -> u32 {
    let before = text.get(..offset.min(text.len())).unwrap_or_default();
    u32::try_from(before.matches('\n').count() + 1).unwrap_or(u32::MAX)
}

impl Policies {
    /// Parses policy files and validates every policy against `schema` (Cedar's JSON schema
    /// format, as `policy_schema` generates it). Errors name the file and the byte offset at
    /// fault in it.
    pub(crate) fn compile(files: &[PolicyFile], schema: &Value) -> Result<Policies, PolicyLoadError> {
        let mut set = PolicySet::new();
        let mut count = 0;
        let mut origins = BTreeMap::new();
        // For each merged id: the file it comes from and its offset there.
        let mut starts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for (file_index, file) in files.iter().enumerate() {
            let at = |offset: usize, message: String| PolicyLoadError::At { file: file_index, offset, message };
            let parsed = PolicySet::from_str(&file.text)
                .map_err(|e| at(first_offset(&e).unwrap_or(0), with_help(one_line(&e.to_string()), &e)))?;
            let offsets = policy_offsets(&file.text, &parsed);
            if let Some(template) = parsed.templates().next() {
                let offset = offsets.get(&template.id().to_string()).copied().unwrap_or(0);
                return Err(at(offset, "templates are not supported".into()));
            }
            let mut policies: Vec<_> = parsed.policies().collect();
            policies.sort_by_key(|a| a.id().to_string());
            for policy in policies {
                let offset = offsets.get(&policy.id().to_string()).copied().unwrap_or(0);
                let id = format!("{file_index}:{}", policy.id());
                origins.insert(
                    id.clone(),
                    PolicyOrigin {
                        id: policy.annotation("id").map(str::to_owned),
                        file: file.name.clone(),
                        line: line_of(&file.text, offset),
                    },
                );
                starts.insert(id.clone(), (file_index, offset));
                set.add(policy.new_id(PolicyId::new(&id))).map_err(|e| at(offset, one_line(&e.to_string())))?;
                count += 1;
            }
        }
        let policies = Policies { set, count, origins };
        policies.validate(schema, &starts)?;
        Ok(policies)
    }

    /// Validates every policy against the schema, reporting the first error in file order.
    ///
    /// Rows are untyped (their entity types are open records), which Cedar's strict mode does
    /// not admit, so two passes run: the partial mode typechecks every expression against the
    /// closed context and the declared actions (a context field no operation has is an error,
    /// a row attribute is not), and the strict mode's checks of names (every action, entity
    /// type and policy scope must exist and apply), which the partial mode skips.
    fn validate(&self, schema: &Value, starts: &BTreeMap<String, (usize, usize)>) -> Result<(), PolicyLoadError> {
        let schema = Schema::from_json_value(schema.clone())
            .map_err(|e| PolicyLoadError::Schema(with_help(one_line(&e.to_string()), &e)))?;
        let validator = Validator::new(schema);
        let strict = validator.validate(&self.set, ValidationMode::Strict);
        let partial = validator.validate(&self.set, ValidationMode::Partial);
        let mut found: Vec<(usize, usize, String, String)> = Vec::new();
        let report = |found: &mut Vec<(usize, usize, String, String)>, id: &PolicyId, error: &dyn Diagnostic| {
            let (file, start) = starts.get(AsRef::<str>::as_ref(id)).copied().unwrap_or((0, 0));
            let offset = first_offset(error).unwrap_or(start);
            let message = with_help(self.rename(&one_line(&error.to_string())), error);
            found.push((file, offset, message, id.to_string()));
        };
        for error in strict.validation_errors() {
            if matches!(
                error,
                ValidationError::UnrecognizedEntityType(_)
                    | ValidationError::UnrecognizedActionId(_)
                    | ValidationError::InvalidEnumEntity(_)
                    | ValidationError::InvalidActionApplication(_)
            ) {
                report(&mut found, error.policy_id(), error);
            }
        }
        for error in partial.validation_errors() {
            report(&mut found, error.policy_id(), error);
        }
        // A policy whose scope matches no operation's principal and resource never applies;
        // said only of a policy with no more precise error (a misspelt action is one).
        for warning in strict.validation_warnings() {
            let id = warning.policy_id().to_string();
            if matches!(warning, ValidationWarning::InvalidActionApplication(_)) && !found.iter().any(|f| f.3 == id) {
                report(&mut found, warning.policy_id(), warning);
            }
        }
        found.sort();
        match found.into_iter().next() {
            Some((file, offset, message, _)) => Err(PolicyLoadError::At { file, offset, message }),
            None => Ok(()),
        }
    }

    /// `text` with every internal policy id (`0:policy3`) replaced by the policy's `@id`, file
    /// and line.
    fn rename(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (id, origin) in &self.origins {
            out = out.replace(&format!("policy `{id}`"), &origin.describe());
        }
        out
    }

    /// Where the policy with internal id `id` was written.
    fn origin(&self, id: &PolicyId) -> Option<&PolicyOrigin> {
        self.origins.get(AsRef::<str>::as_ref(id))
    }

    /// Whether there is no policy at all.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// How many policies there are.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Decides one request.
    pub fn decide(
        &self,
        principal: &PolicyEntity,
        action: &str,
        resource: &PolicyEntity,
        context: Value,
    ) -> PolicyDecision {
        match self.try_decide(principal, action, resource, context) {
            Ok(decision) => decision,
            Err(message) => PolicyDecision::Error(message),
        }
    }

    fn try_decide(
        &self,
        principal: &PolicyEntity,
        action: &str,
        resource: &PolicyEntity,
        context: Value,
    ) -> Result<PolicyDecision, String> {
        let principal_uid = uid(&principal.entity_type, &principal.id)?;
        let resource_uid = uid(&resource.entity_type, &resource.id)?;
        let action_uid = uid("Action", action)?;
        let mut entities = vec![entity(principal_uid.clone(), &principal.attrs)?];
        if resource_uid != principal_uid {
            entities.push(entity(resource_uid.clone(), &resource.attrs)?);
        }
        let entities = Entities::from_entities(entities, None).map_err(|e| e.to_string())?;
        let Value::Object(pairs) = context else { return Err("the context is not an object".into()) };
        let context = Context::from_pairs(pairs.iter().filter_map(|(k, v)| restricted(v).map(|r| (k.clone(), r))))
            .map_err(|e| e.to_string())?;
        let request =
            Request::new(principal_uid, action_uid, resource_uid, context, None).map_err(|e| e.to_string())?;
        let response = Authorizer::new().is_authorized(&request, &self.set, &entities);
        let errors: Vec<String> = response
            .diagnostics()
            .errors()
            .map(|e| match e {
                cedar_policy::AuthorizationError::PolicyEvaluationError(e) => match self.origin(e.policy_id()) {
                    Some(origin) => format!("{}: {}", origin.describe(), one_line(&e.inner().to_string())),
                    None => self.rename(&one_line(&e.to_string())),
                },
            })
            .collect();
        if !errors.is_empty() {
            return Ok(PolicyDecision::Error(errors.join("; ")));
        }
        match response.decision() {
            Decision::Allow => Ok(PolicyDecision::Permit),
            Decision::Deny => {
                let mut names: Vec<String> = response
                    .diagnostics()
                    .reason()
                    .map(|id| self.origin(id).map_or_else(|| id.to_string(), PolicyOrigin::name))
                    .collect();
                names.sort();
                names.dedup();
                if names.is_empty() { Ok(PolicyDecision::NoPermit) } else { Ok(PolicyDecision::Forbid(names)) }
            }
        }
    }
}

fn uid(entity_type: &str, id: &str) -> Result<EntityUid, String> {
    let name = EntityTypeName::from_str(entity_type).map_err(|e| e.to_string())?;
    Ok(EntityUid::from_type_name_and_id(name, EntityId::new(id)))
}

/// An entity built directly from its attributes. Building Cedar values directly, rather than
/// through Cedar's JSON format, keeps a turn's policy step cheap and means no attribute of a
/// record is ever read as a Cedar escape (`__entity`, `__extn`).
#[allow(clippy::disallowed_types, reason = "Cedar's constructor takes a std HashMap; nothing iterates it into output")]
fn entity(uid: EntityUid, attrs: &Value) -> Result<Entity, String> {
    let attrs: std::collections::HashMap<String, RestrictedExpression> = match attrs {
        Value::Object(map) => map.iter().filter_map(|(k, v)| restricted(v).map(|r| (k.clone(), r))).collect(),
        _ => std::collections::HashMap::new(),
    };
    Entity::new(uid, attrs, std::collections::HashSet::new()).map_err(|e| e.to_string())
}

/// A JSON value as a Cedar value: strings, booleans, integers, sets, records and datetimes
/// ([`datetime`]). `null` and numbers that are not integers have no Cedar form and are left
/// out, so a policy that reads them errs, and an erring policy refuses; so does a datetime
/// whose text Cedar does not read.
fn restricted(value: &Value) -> Option<RestrictedExpression> {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key(DATETIME_MARK) => {
            map.get(DATETIME_MARK).and_then(Value::as_str).map(RestrictedExpression::new_datetime)
        }
        Value::Null => None,
        Value::Bool(b) => Some(RestrictedExpression::new_bool(*b)),
        Value::Number(n) => n.as_i64().map(RestrictedExpression::new_long),
        Value::String(s) => Some(RestrictedExpression::new_string(s.clone())),
        Value::Array(items) => Some(RestrictedExpression::new_set(items.iter().filter_map(restricted))),
        Value::Object(map) => {
            RestrictedExpression::new_record(map.iter().filter_map(|(k, v)| restricted(v).map(|r| (k.clone(), r)))).ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICIES: &str = r#"
permit(principal, action == Action::"cancel", resource);

@id("order_of_another_user")
forbid(principal, action, resource) unless { resource.user_id == principal.key };

@id("order_not_pending")
forbid(principal, action == Action::"cancel", resource) unless { resource.status == "pending" };
"#;

    fn schema() -> Value {
        let row = json!({"type": "Record", "attributes": {"key": {"type": "String"}}, "additionalAttributes": true});
        let context = json!({"type": "Record", "attributes": {
            "args": {"type": "Record", "attributes": {"order_id": {"type": "String"}}},
            "derived": {"type": "Record", "attributes": {}},
            "members": {"type": "Record", "attributes": {}},
        }});
        let applies = json!({"principalTypes": ["User"], "resourceTypes": ["Order"], "context": context});
        json!({"": {
            "entityTypes": {"User": {"shape": row}, "Order": {"shape": row}},
            "actions": {"cancel": {"appliesTo": applies}, "other": {"appliesTo": applies}},
        }})
    }

    fn compile(text: &str) -> Result<Policies, PolicyLoadError> {
        Policies::compile(&[PolicyFile { name: "p.cedar".into(), text: text.into() }], &schema())
    }

    fn entity(t: &str, id: &str, attrs: Value) -> PolicyEntity {
        PolicyEntity { entity_type: t.into(), id: id.into(), attrs }
    }

    #[test]
    fn forbid_policies_name_the_broken_rule() {
        let policies = compile(POLICIES).unwrap();
        let alice = entity("User", "alice", json!({"key": "alice"}));
        let own = entity("Order", "#1", json!({"key": "#1", "user_id": "alice", "status": "pending"}));
        assert_eq!(policies.decide(&alice, "cancel", &own, json!({})), PolicyDecision::Permit);
        let foreign = entity("Order", "#2", json!({"key": "#2", "user_id": "bob", "status": "delivered"}));
        assert_eq!(
            policies.decide(&alice, "cancel", &foreign, json!({})),
            PolicyDecision::Forbid(vec!["order_not_pending".into(), "order_of_another_user".into()])
        );
        assert_eq!(policies.decide(&alice, "other", &own, json!({})), PolicyDecision::NoPermit);
    }

    #[test]
    fn a_forbid_without_an_id_is_named_by_its_file_and_line() {
        let policies = compile("permit(principal, action, resource);\n\nforbid(principal, action, resource);").unwrap();
        let alice = entity("User", "alice", json!({"key": "alice"}));
        let own = entity("Order", "#1", json!({"key": "#1"}));
        assert_eq!(
            policies.decide(&alice, "cancel", &own, json!({})),
            PolicyDecision::Forbid(vec!["p.cedar:3".into()])
        );
    }

    #[test]
    fn a_policy_that_errs_at_runtime_is_named_by_its_id_file_and_line() {
        let policies = compile(POLICIES).unwrap();
        let alice = entity("User", "alice", json!({"key": "alice"}));
        let no_status = entity("Order", "#1", json!({"key": "#1", "user_id": "alice"}));
        let PolicyDecision::Error(message) = policies.decide(&alice, "cancel", &no_status, json!({})) else {
            panic!("a policy reading a missing attribute must err");
        };
        assert!(message.starts_with("policy `order_not_pending` (p.cedar:7): "), "{message}");
        assert!(message.contains("status"), "{message}");
        assert!(!message.contains("0:policy"), "{message}");
    }

    #[test]
    fn a_policy_file_that_does_not_parse_names_the_place_in_it() {
        let err = compile("permit(principal, action, resource);\nforbid(principal, action resource);").unwrap_err();
        let PolicyLoadError::At { file, offset, .. } = err else { panic!("{err:?}") };
        assert_eq!(file, 0);
        assert!(offset > "permit(principal, action, resource);\n".len(), "{offset}");
    }

    #[test]
    fn a_misspelt_action_an_unknown_type_and_an_unknown_context_field_are_refused() {
        for (text, needle, says) in [
            (r#"forbid(principal, action == Action::"cancle", resource);"#, "Action::\"cancle\"", "cancle"),
            (r#"forbid(principal, action, resource is Ordr);"#, "Ordr", "Ordr"),
            (
                r#"forbid(principal, action == Action::"cancel", resource) when { context.args.order == "x" };"#,
                "context.args.order",
                "order",
            ),
        ] {
            let Err(PolicyLoadError::At { offset, message, .. }) = compile(text) else {
                panic!("`{text}` must not validate")
            };
            assert_eq!(Some(offset), text.find(needle), "{text}: {message}");
            assert!(message.contains(says), "{text}: {message}");
            assert!(!message.contains("0:policy"), "{text}: {message}");
        }
    }

    #[test]
    fn row_attributes_stay_open_until_tables_are_typed() {
        assert!(
            compile(r#"forbid(principal, action, resource) when { resource.anything == principal.other };"#).is_ok()
        );
    }
}
