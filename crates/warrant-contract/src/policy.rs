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
use std::sync::{Arc, Mutex};

use cedar_policy::{
    ActionConstraint, Authorizer, Context, Decision, Entities, Entity, EntityId, EntityTypeName, EntityUid, Policy,
    PolicyId, PolicySet, Request, RestrictedExpression, Schema, ValidationError, ValidationMode, ValidationWarning,
    Validator,
};
use miette::Diagnostic;
use serde_json::Value;
#[cfg(test)]
use serde_json::json;

use crate::policy_reads::Reads;

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
    /// For each operation, the policies whose scope can name its action, in `set`'s order: the
    /// only ones that can permit, forbid or err for it (the schema gives actions no groups, so
    /// `action in [...]` holds only for the actions listed). Built once, when the contract loads.
    by_action: BTreeMap<String, PolicySet>,
    /// For each operation, what its policies can read of the context: a decision hands Cedar
    /// that part alone. Built with `by_action`.
    context_reads: BTreeMap<String, Reads>,
    /// Each operation's action, as Cedar names it. Built with `by_action`.
    action_uids: BTreeMap<String, EntityUid>,
    /// The rows' entities built so far, shared by every clone of the contract.
    entities: Arc<EntityCache>,
}

/// How many rows' Cedar entities the entity cache keeps. Past it, the half used longest ago is
/// dropped. As many pairs of them are kept as one request's entities, then all are dropped.
pub const ENTITY_CACHE_ROWS: usize = 1024;

/// Cedar entities built from stored rows, by table and key, each with the revision and the value
/// it was built from. An entry serves a row only at that revision and with an equal value, so
/// what it serves is exactly what building the entity again would give: a contract shared by two
/// stores, or facts that reuse a revision, get no other row's attributes. Each entry is kept
/// under a number no other entry ever has, and the entities of one request (its principal and
/// resource, with their hierarchy computed) are kept by the pair of those numbers. Pure data: no
/// clock, no IO; its size is bounded by [`ENTITY_CACHE_ROWS`].
#[derive(Default)]
struct EntityCache {
    entries: Mutex<EntityEntries>,
}

#[derive(Default)]
struct EntityEntries {
    rows: BTreeMap<(String, String), CachedEntity>,
    /// A request's entities, by the numbers of its principal's and resource's entries.
    pairs: BTreeMap<(u64, Option<u64>), Entities>,
    /// A counter of lookups: the use each entry saw last, for dropping the oldest, and the
    /// number each new entry is kept under.
    clock: u64,
}

#[derive(Clone)]
struct CachedEntity {
    revision: i64,
    value: Arc<Value>,
    entity: Arc<Entity>,
    /// The number this entry is kept under.
    id: u64,
    used: u64,
}

impl std::fmt::Debug for EntityCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rows = self.entries.lock().map(|e| e.rows.len()).unwrap_or_default();
        f.debug_struct("EntityCache").field("rows", &rows).finish()
    }
}

impl EntityCache {
    /// The entity built from `value` at `revision` of row `key` of `table`, if one is kept.
    fn get(&self, table: &str, key: &str, revision: i64, value: &Arc<Value>) -> Option<BuiltEntity> {
        let (kept, entity) = {
            let mut entries = self.entries.lock().ok()?;
            entries.clock += 1;
            let clock = entries.clock;
            let found = entries.rows.get_mut(&(table.to_owned(), key.to_owned()))?;
            if found.revision != revision {
                return None;
            }
            found.used = clock;
            (found.value.clone(), BuiltEntity { entity: found.entity.clone(), kept: Some(found.id) })
        };
        // Compared outside the lock: a revision reused with another value is another row.
        (Arc::ptr_eq(&kept, value) || *kept == **value).then_some(entity)
    }

    /// Keeps `entity`, built from `value` at `revision`, and answers it with its number.
    fn insert(&self, table: &str, key: &str, revision: i64, value: &Arc<Value>, entity: Entity) -> BuiltEntity {
        let entity = Arc::new(entity);
        let Ok(mut entries) = self.entries.lock() else { return BuiltEntity { entity, kept: None } };
        if entries.rows.len() >= ENTITY_CACHE_ROWS {
            let mut uses: Vec<u64> = entries.rows.values().map(|e| e.used).collect();
            uses.sort_unstable();
            let median = uses.get(uses.len() / 2).copied().unwrap_or_default();
            entries.rows.retain(|_, e| e.used > median);
        }
        entries.clock += 1;
        let id = entries.clock;
        entries.rows.insert(
            (table.to_owned(), key.to_owned()),
            CachedEntity { revision, value: value.clone(), entity: entity.clone(), id, used: id },
        );
        BuiltEntity { entity, kept: Some(id) }
    }

    /// The entities of a request between kept entries `pair`, built by `build` the first time.
    fn pair(
        &self,
        pair: (u64, Option<u64>),
        build: impl FnOnce() -> Result<Entities, String>,
    ) -> Result<Entities, String> {
        if let Ok(entries) = self.entries.lock()
            && let Some(kept) = entries.pairs.get(&pair)
        {
            return Ok(kept.clone());
        }
        let built = build()?;
        if let Ok(mut entries) = self.entries.lock() {
            if entries.pairs.len() >= ENTITY_CACHE_ROWS {
                entries.pairs.clear();
            }
            entries.pairs.insert(pair, built.clone());
        }
        Ok(built)
    }
}

/// A request's principal or resource as a Cedar entity, with the number the entity cache keeps
/// it under (`None`: built for this request alone).
#[derive(Debug, Clone)]
pub struct BuiltEntity {
    pub(crate) entity: Arc<Entity>,
    pub(crate) kept: Option<u64>,
}

impl BuiltEntity {
    fn once(entity: Entity) -> BuiltEntity {
        BuiltEntity { entity: Arc::new(entity), kept: None }
    }
}

/// A request's principal and resource as Cedar entities; `resource` is `None` when it is the
/// principal itself.
#[derive(Debug)]
pub struct RequestEntities {
    /// The request's principal.
    pub principal: BuiltEntity,
    /// Its resource, unless that is the principal.
    pub resource: Option<BuiltEntity>,
}

/// A stored row as a policy request's principal or resource: its table, Cedar type, key and
/// value, and, when the value is the row as read (no effect of the turn changed it), the revision
/// it was read at, under which its entity is kept and reused.
#[derive(Debug)]
pub struct RowEntity<'a> {
    /// The row's table.
    pub table: &'a str,
    /// The Cedar entity type the table's rows are.
    pub entity_type: &'a str,
    /// The row's key.
    pub key: &'a str,
    /// The row's value.
    pub value: &'a Arc<Value>,
    /// The revision the value was read at, when no effect of the turn changed it.
    pub stored: Option<i64>,
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
        let mut policies = Policies { set, count, origins, ..Policies::default() };
        policies.validate(schema, &starts)?;
        policies.by_action = policies.split_by_action(schema).map_err(PolicyLoadError::Schema)?;
        policies.context_reads = policies.context_reads().map_err(PolicyLoadError::Schema)?;
        policies.action_uids = policies
            .by_action
            .keys()
            .map(|name| Ok((name.clone(), uid("Action", name)?)))
            .collect::<Result<_, String>>()
            .map_err(PolicyLoadError::Schema)?;
        Ok(policies)
    }

    /// For each action of `schema`, the policies whose action scope can name it, in `set`'s
    /// order, so that a decision evaluates those alone and reports their errors in the order the
    /// whole set would. Each is kept with its action scope widened to every action, which is the
    /// same for the one action its set decides and is not evaluated again (an `action in [...]`
    /// scope builds its set on every request).
    fn split_by_action(&self, schema: &Value) -> Result<BTreeMap<String, PolicySet>, String> {
        let actions = schema.get("").and_then(|ns| ns.get("actions")).and_then(Value::as_object);
        let mut by_action = BTreeMap::new();
        for name in actions.into_iter().flat_map(|a| a.keys()) {
            let action = uid("Action", name)?;
            let mut set = PolicySet::new();
            for policy in self.set.policies() {
                let applies = match policy.action_constraint() {
                    ActionConstraint::Any => true,
                    ActionConstraint::Eq(one) => one == action,
                    ActionConstraint::In(list) => list.contains(&action),
                };
                if applies {
                    set.add(any_action(policy)?).map_err(|e| e.to_string())?;
                }
            }
            by_action.insert(name.clone(), set);
        }
        Ok(by_action)
    }

    /// What each operation's policies can read of the context ([`Reads`]).
    fn context_reads(&self) -> Result<BTreeMap<String, Reads>, String> {
        let mut reads = BTreeMap::new();
        for (action, set) in &self.by_action {
            let json: Vec<Value> =
                set.policies().map(|p| p.to_json().map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
            reads.insert(action.clone(), Reads::of_policies(&json));
        }
        Ok(reads)
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

    /// Whether a policy of `action` can read any of the context at `path` (an attribute, then
    /// attributes of it; any path, for an action no policy scope was split for): what no policy
    /// of the action reads need not be built.
    pub fn reads_context_at(&self, action: &str, path: &[&str]) -> bool {
        let Some(mut at) = self.context_reads.get(action) else { return true };
        for attr in path {
            match at {
                Reads::All => return true,
                Reads::Some(attrs) => match attrs.get(*attr) {
                    Some(next) => at = next,
                    None => return false,
                },
            }
        }
        true
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
        let build = || -> Result<RequestEntities, String> {
            let principal_uid = uid(&principal.entity_type, &principal.id)?;
            let resource_uid = uid(&resource.entity_type, &resource.id)?;
            uid("Action", action)?;
            let same = resource_uid == principal_uid;
            let principal = BuiltEntity::once(entity(principal_uid, &principal.attrs)?);
            let resource = if same { None } else { Some(BuiltEntity::once(entity(resource_uid, &resource.attrs)?)) };
            Ok(RequestEntities { principal, resource })
        };
        match build() {
            Ok(entities) => self.decide_entities(entities, action, context),
            Err(message) => PolicyDecision::Error(message),
        }
    }

    /// The Cedar entity of a stored row: kept by its table, key and revision once built (from
    /// `attrs`, the row's attributes in the form [`Policies::decide`] takes), and reused while
    /// the row is at that revision with an equal value. A row an effect of the turn changed is
    /// built each time and not kept.
    pub fn row_entity(&self, row: &RowEntity<'_>, attrs: impl FnOnce() -> Value) -> Result<BuiltEntity, String> {
        if let Some(revision) = row.stored
            && let Some(kept) = self.entities.get(row.table, row.key, revision, row.value)
        {
            return Ok(kept);
        }
        let built = entity(uid(row.entity_type, row.key)?, &attrs())?;
        Ok(match row.stored {
            Some(revision) => self.entities.insert(row.table, row.key, revision, row.value, built),
            None => BuiltEntity::once(built),
        })
    }

    /// An entity that is no stored row (the anonymous actor), built each time.
    pub fn plain_entity(entity_type: &str, id: &str, attrs: &Value) -> Result<BuiltEntity, String> {
        Ok(BuiltEntity::once(entity(uid(entity_type, id)?, attrs)?))
    }

    /// Decides one request between built entities.
    pub fn decide_entities(&self, entities: RequestEntities, action: &str, context: Value) -> PolicyDecision {
        match self.try_decide(entities, action, context) {
            Ok(decision) => decision,
            Err(message) => PolicyDecision::Error(message),
        }
    }

    fn try_decide(
        &self,
        RequestEntities { principal, resource }: RequestEntities,
        action: &str,
        context: Value,
    ) -> Result<PolicyDecision, String> {
        let principal_uid = principal.entity.uid();
        let resource_uid = resource.as_ref().map_or_else(|| principal_uid.clone(), |r| r.entity.uid());
        let action_uid = match self.action_uids.get(action) {
            Some(known) => known.clone(),
            None => uid("Action", action)?,
        };
        // Two kept rows' entities are kept as a pair, their hierarchy computed once.
        let pair = match (principal.kept, resource.as_ref().map(|r| r.kept)) {
            (Some(p), None) => Some((p, None)),
            (Some(p), Some(Some(r))) => Some((p, Some(r))),
            _ => None,
        };
        let build = || {
            let owned = [principal.entity.clone()].into_iter().chain(resource.as_ref().map(|r| r.entity.clone()));
            Entities::from_entities(owned.map(Arc::unwrap_or_clone), None).map_err(|e| e.to_string())
        };
        let entities = match pair {
            Some(pair) => self.entities.pair(pair, build)?,
            None => build()?,
        };
        let Value::Object(pairs) = context else { return Err("the context is not an object".into()) };
        // The part of the context the action's policies read, made Cedar's without a copy of
        // the rest; all of it for an action no policy scope was split for.
        let context = match self.context_reads.get(action) {
            Some(Reads::Some(attrs)) => Context::from_pairs(attrs.iter().filter_map(|(name, reads)| {
                pairs.get(name).and_then(|v| restricted_read(v, reads)).map(|r| (name.clone(), r))
            })),
            _ => Context::from_pairs(pairs.iter().filter_map(|(k, v)| restricted(v).map(|r| (k.clone(), r)))),
        }
        .map_err(|e| e.to_string())?;
        let request =
            Request::new(principal_uid, action_uid, resource_uid, context, None).map_err(|e| e.to_string())?;
        let set = self.by_action.get(action).unwrap_or(&self.set);
        let response = Authorizer::new().is_authorized(&request, set, &entities);
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

/// `policy` with the same id, annotations and conditions, for every action.
fn any_action(policy: &Policy) -> Result<Policy, String> {
    let mut json = policy.to_json().map_err(|e| e.to_string())?;
    if let Some(scope) = json.get_mut("action") {
        *scope = serde_json::json!({"op": "All"});
    }
    Policy::from_json(Some(policy.id().clone()), json).map_err(|e| e.to_string())
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

/// The part of `value` that `reads` names, as a Cedar value: what [`Reads::keep`] keeps of it,
/// made Cedar's by [`restricted`] without the copy `keep` makes.
fn restricted_read(value: &Value, reads: &Reads) -> Option<RestrictedExpression> {
    match (reads, value) {
        (Reads::Some(attrs), Value::Object(map)) if !map.contains_key(DATETIME_MARK) => {
            RestrictedExpression::new_record(attrs.iter().filter_map(|(name, reads)| {
                map.get(name).and_then(|v| restricted_read(v, reads)).map(|r| (name.clone(), r))
            }))
            .ok()
        }
        _ => restricted(value),
    }
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
    fn the_part_of_the_context_read_is_made_cedar_s_as_the_part_kept_would_be() {
        let some = |pairs: Vec<(&str, Reads)>| Reads::Some(pairs.into_iter().map(|(k, r)| (k.to_owned(), r)).collect());
        let context = json!({
            "args": {"id": {"deep": [1, 2, null]}, "other": "x", "gone": null, "ratio": 1.5},
            "derived": {"paid": 3, "at": {DATETIME_MARK: "2026-01-01"}},
            "members": {"card": {"source": "gift_card", "balance": 40}},
            "now": {DATETIME_MARK: "2026-01-01T00:00:00Z"},
        });
        let cases = [
            Reads::All,
            Reads::none(),
            some(vec![("args", some(vec![("id", Reads::All), ("gone", Reads::All), ("missing", Reads::All)]))]),
            some(vec![("args", some(vec![("id", some(vec![("deep", Reads::All)])), ("ratio", Reads::All)]))]),
            // An attribute of a datetime or of a string is read as the whole value, as kept.
            some(vec![("now", some(vec![("x", Reads::All)])), ("args", some(vec![("other", some(vec![]))]))]),
            some(vec![("derived", some(vec![("at", some(vec![])), ("paid", Reads::All)])), ("members", Reads::All)]),
        ];
        for reads in cases {
            let kept = reads.keep(&context, DATETIME_MARK).into_owned();
            let Value::Object(kept) = kept else { panic!("{kept}") };
            let Value::Object(whole) = &context else { panic!("{context}") };
            let direct: Vec<(String, Option<RestrictedExpression>)> = match &reads {
                Reads::Some(attrs) => {
                    attrs.iter().filter_map(|(k, r)| whole.get(k).map(|v| (k.clone(), restricted_read(v, r)))).collect()
                }
                Reads::All => whole.iter().map(|(k, v)| (k.clone(), restricted(v))).collect(),
            };
            let via_copy: Vec<(String, Option<RestrictedExpression>)> =
                kept.iter().map(|(k, v)| (k.clone(), restricted(v))).collect();
            let sorted = |mut pairs: Vec<(String, Option<RestrictedExpression>)>| {
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
                pairs
            };
            assert_eq!(sorted(direct), sorted(via_copy), "{reads:?}");
        }
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
    fn each_action_is_decided_by_its_own_policies_as_by_the_whole_set() {
        let policies = compile(POLICIES).unwrap();
        // `other` is named by one forbid alone; `cancel` by all three policies.
        assert_eq!(policies.by_action.get("other").map(|s| s.policies().count()), Some(1));
        assert_eq!(policies.by_action.get("cancel").map(|s| s.policies().count()), Some(3));
        let mut whole = policies.clone();
        whole.by_action.clear();
        let alice = entity("User", "alice", json!({"key": "alice"}));
        for order in [
            json!({"key": "#1", "user_id": "alice", "status": "pending"}),
            json!({"key": "#1", "user_id": "bob", "status": "delivered"}),
            json!({"key": "#1", "user_id": "alice"}),
            json!({"key": "#1"}),
        ] {
            let order = entity("Order", "#1", order);
            for action in ["cancel", "other"] {
                assert_eq!(
                    policies.decide(&alice, action, &order, json!({})),
                    whole.decide(&alice, action, &order, json!({})),
                    "{action} {order:?}"
                );
            }
        }
    }

    #[test]
    fn a_row_s_entity_is_built_once_per_revision_and_only_for_an_equal_value() {
        let policies = compile(POLICIES).unwrap();
        let built = std::cell::Cell::new(0);
        let decide = |revision: Option<i64>, order: Value| {
            let value = Arc::new(order);
            let row = RowEntity { table: "order", entity_type: "Order", key: "#1", value: &value, stored: revision };
            let resource = policies
                .row_entity(&row, || {
                    built.set(built.get() + 1);
                    (*value).clone()
                })
                .unwrap();
            let principal = Policies::plain_entity("User", "alice", &json!({"key": "alice"})).unwrap();
            policies.decide_entities(RequestEntities { principal, resource: Some(resource) }, "cancel", json!({}))
        };
        let pending = json!({"key": "#1", "user_id": "alice", "status": "pending"});
        assert_eq!(decide(Some(3), pending.clone()), PolicyDecision::Permit);
        assert_eq!(decide(Some(3), pending.clone()), PolicyDecision::Permit);
        assert_eq!(built.get(), 1);
        // The same revision with another value (another store, or facts that reuse revisions)
        // is built again and decided on its own value.
        let delivered = json!({"key": "#1", "user_id": "alice", "status": "delivered"});
        assert_eq!(decide(Some(3), delivered.clone()), PolicyDecision::Forbid(vec!["order_not_pending".into()]));
        assert_eq!(built.get(), 2);
        // A new revision is built again; a value an effect changed is built each time, not kept.
        assert_eq!(decide(Some(4), pending.clone()), PolicyDecision::Permit);
        assert_eq!(built.get(), 3);
        assert_eq!(decide(None, delivered.clone()), PolicyDecision::Forbid(vec!["order_not_pending".into()]));
        assert_eq!(decide(None, delivered), PolicyDecision::Forbid(vec!["order_not_pending".into()]));
        assert_eq!(built.get(), 5);
        assert_eq!(decide(Some(4), pending), PolicyDecision::Permit);
        assert_eq!(built.get(), 5);
    }

    #[test]
    fn the_entity_cache_stays_within_its_bound() {
        let cache = EntityCache::default();
        let built = super::entity(uid("Order", "#1").unwrap(), &json!({})).unwrap();
        let value = Arc::new(json!({}));
        for i in 0..ENTITY_CACHE_ROWS * 3 {
            cache.insert("order", &i.to_string(), 1, &value, built.clone());
            // The row used last is kept through every drop.
            assert!(cache.get("order", "0", 1, &value).is_some(), "{i}");
        }
        let rows = cache.entries.lock().unwrap().rows.len();
        assert!(rows <= ENTITY_CACHE_ROWS && rows > ENTITY_CACHE_ROWS / 4, "{rows}");
    }

    #[test]
    fn two_kept_rows_entities_are_kept_as_a_pair_and_decide_as_built_afresh() {
        let policies = compile(POLICIES).unwrap();
        let row = |table: &'static str, entity_type: &'static str, key: &'static str, value: Value, revision| {
            let value = Arc::new(value);
            let row = RowEntity { table, entity_type, key, value: &value, stored: Some(revision) };
            policies.row_entity(&row, || (*value).clone()).unwrap()
        };
        let alice = || row("user", "User", "alice", json!({"key": "alice"}), 1);
        let pending = json!({"key": "#1", "user_id": "alice", "status": "pending"});
        let delivered = json!({"key": "#1", "user_id": "alice", "status": "delivered"});
        let pairs = || policies.entities.entries.lock().unwrap().pairs.len();
        let decide = |principal: BuiltEntity, resource: BuiltEntity| {
            policies.decide_entities(RequestEntities { principal, resource: Some(resource) }, "cancel", json!({}))
        };
        assert_eq!(decide(alice(), row("order", "Order", "#1", pending.clone(), 3)), PolicyDecision::Permit);
        assert_eq!(pairs(), 1);
        assert_eq!(decide(alice(), row("order", "Order", "#1", pending.clone(), 3)), PolicyDecision::Permit);
        assert_eq!(pairs(), 1);
        // The resource at another revision is another pair, decided on its own value.
        let forbid = PolicyDecision::Forbid(vec!["order_not_pending".into()]);
        assert_eq!(decide(alice(), row("order", "Order", "#1", delivered.clone(), 4)), forbid);
        assert_eq!(pairs(), 2);
        // An entity built for one request alone is never kept in a pair.
        let fresh = Policies::plain_entity("Order", "#1", &delivered).unwrap();
        assert_eq!(decide(alice(), fresh), forbid);
        assert_eq!(pairs(), 2);
        // The principal alone (the resource is the principal) is a pair of its own.
        let own = policies.decide_entities(RequestEntities { principal: alice(), resource: None }, "cancel", json!({}));
        assert_eq!(
            own,
            policies.decide(
                &entity("User", "alice", json!({"key": "alice"})),
                "cancel",
                &entity("User", "alice", json!({"key": "alice"})),
                json!({})
            )
        );
        assert_eq!(pairs(), 3);
    }

    #[test]
    fn row_attributes_stay_open_until_tables_are_typed() {
        assert!(
            compile(r#"forbid(principal, action, resource) when { resource.anything == principal.other };"#).is_ok()
        );
    }
}
