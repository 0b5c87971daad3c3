//! Policy (DESIGN.md §3 step 5): Cedar decides permit or forbid for (actor, operation, record,
//! context). Policies that forbid carry an `@id("…")` annotation, which becomes the name of the
//! broken rule in the act's reasons. Evaluation that errs fails closed: an erroring policy might
//! have forbidden, so the act is refused.

use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Decision, Entities, Entity, EntityId, EntityTypeName, EntityUid, PolicyId, PolicySet, Request,
    RestrictedExpression,
};
use serde_json::Value;
#[cfg(test)]
use serde_json::json;

/// The contract's Cedar policies, merged from its policy files.
#[derive(Debug, Clone, Default)]
pub struct Policies {
    set: PolicySet,
    count: usize,
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
    /// Policies forbid: their `@id` annotations (or Cedar ids), sorted.
    Forbid(Vec<String>),
    /// No policy permits.
    NoPermit,
    /// Evaluation could not be completed; treated as a refusal.
    Error(String),
}

impl Policies {
    /// Parses policy files (name, text, offset of the name in the contract for errors).
    pub(crate) fn compile(files: &[(String, String, usize)]) -> Result<Policies, (usize, String, String)> {
        let mut set = PolicySet::new();
        let mut count = 0;
        for (file_index, (name, text, offset)) in files.iter().enumerate() {
            let parsed =
                PolicySet::from_str(text).map_err(|e| (*offset, name.clone(), format!("{e}").replace('\n', " ")))?;
            if parsed.templates().next().is_some() {
                return Err((*offset, name.clone(), "templates are not supported".into()));
            }
            let mut policies: Vec<_> = parsed.policies().collect();
            policies.sort_by_key(|a| a.id().to_string());
            for policy in policies {
                let id = PolicyId::new(format!("{file_index}:{}", policy.id()));
                set.add(policy.new_id(id)).map_err(|e| (*offset, name.clone(), e.to_string()))?;
                count += 1;
            }
        }
        Ok(Policies { set, count })
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
        let errors: Vec<String> = response.diagnostics().errors().map(|e| e.to_string()).collect();
        if !errors.is_empty() {
            return Ok(PolicyDecision::Error(errors.join("; ")));
        }
        match response.decision() {
            Decision::Allow => Ok(PolicyDecision::Permit),
            Decision::Deny => {
                let mut names: Vec<String> = response
                    .diagnostics()
                    .reason()
                    .map(|id| self.set.annotation(id, "id").map_or_else(|| id.to_string(), str::to_owned))
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

/// A JSON value as a Cedar value: strings, booleans, integers, sets and records. `null` and
/// numbers that are not integers have no Cedar form and are left out, so a policy that reads
/// them errs, and an erring policy refuses.
fn restricted(value: &Value) -> Option<RestrictedExpression> {
    match value {
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

    fn entity(t: &str, id: &str, attrs: Value) -> PolicyEntity {
        PolicyEntity { entity_type: t.into(), id: id.into(), attrs }
    }

    #[test]
    fn forbid_policies_name_the_broken_rule() {
        let policies = Policies::compile(&[("p.cedar".into(), POLICIES.into(), 0)]).unwrap();
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
    fn a_policy_that_errs_fails_closed() {
        let policies = Policies::compile(&[("p.cedar".into(), POLICIES.into(), 0)]).unwrap();
        let alice = entity("User", "alice", json!({"key": "alice"}));
        let no_status = entity("Order", "#1", json!({"key": "#1", "user_id": "alice"}));
        assert!(matches!(policies.decide(&alice, "cancel", &no_status, json!({})), PolicyDecision::Error(_)));
    }

    #[test]
    fn a_policy_file_that_does_not_parse_is_refused() {
        let err = Policies::compile(&[("bad.cedar".into(), "permit(principal".into(), 7)]).unwrap_err();
        assert_eq!(err.0, 7);
        assert_eq!(err.1, "bad.cedar");
    }
}
