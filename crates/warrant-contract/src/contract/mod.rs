//! The contract: the TOML file a deployment writes, parsed all or nothing and checked when
//! loaded, so that nothing downstream meets a malformed clause.
//!
//! Parsing is two steps. `serde` reads the file into raw sections that keep the span of every
//! value (unknown fields are errors); then each section is compiled into its checked form, and
//! every error names the line and column of the value at fault. A later section (operations,
//! records, claims, guards, tasks) adds a raw field here and a compile step beside the score's.

use serde::Deserialize;
use toml::Spanned;

use crate::claim::{self, Outbound, RawOutbound};
use crate::expressions::{self, NamedExpressions};
use crate::guard::{self, Guards, RawGuards};
use crate::limits::{self, Limits, RawLimits};
use crate::money;
use crate::operation::{self, Operation, RawOperation};
use crate::policy::{Policies, PolicyFile, PolicyLoadError};
use crate::policy_schema;
use crate::records::Table;
use crate::score::{self, RawScore, Score};
use crate::source::{self, MAX_SOURCE_KINDS, SourceKinds};
use crate::text;

pub use crate::error;
pub mod mcp;
mod tables;

pub(crate) use crate::error::Locator;
pub use error::{ContractError, ContractErrorKind};

/// Where a contract's companion files (Cedar policies) come from. warrant-core does no IO: the
/// engine or the command line reads the files, relative to the contract.
pub trait ContractFiles {
    /// The text of the file at `path`, as written in the contract.
    fn read(&self, path: &str) -> Result<String, String>;
}

/// A contract that names no companion files needs none; any file it names is an error.
#[derive(Debug, Clone, Copy)]
pub struct NoFiles;

impl ContractFiles for NoFiles {
    fn read(&self, path: &str) -> Result<String, String> {
        Err(format!("`{path}` cannot be read here: the contract was given without its folder"))
    }
}

/// A loaded, checked contract.
#[derive(Debug, Clone)]
pub struct Contract {
    origin: String,
    kinds: SourceKinds,
    act_kind: Option<String>,
    score: Score,
    actor: Option<String>,
    currency: Option<money::Currency>,
    tables: Vec<Table>,
    operations: Vec<Operation>,
    policies: Policies,
    guards: Guards,
    hash: String,
    model: ModelConfig,
    outbound: Outbound,
    cedar_schema: serde_json::Value,
    limits: Limits,
    expressions: NamedExpressions,
    mcp: mcp::McpDeclared,
    /// The rows found to fit their tables, shared by every clone of the contract.
    fits: std::sync::Arc<crate::records::FitCache>,
}

impl Contract {
    /// Parses and checks a contract that names no companion files.
    pub fn from_toml(origin: &str, text: &str) -> Result<Contract, ContractError> {
        Contract::load(origin, text, &NoFiles)
    }

    /// Parses and checks the contract in `text`, reading the policy files it names through
    /// `files`. `origin` names the file in error messages.
    pub fn load(origin: &str, text: &str, files: &dyn ContractFiles) -> Result<Contract, ContractError> {
        let at = Locator { origin, text };
        let raw: RawContract = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            at.error(span.start, ContractErrorKind::Syntax(e.message().trim().replace('\n', " ")))
        })?;
        let Some(sources) = raw.sources else {
            return Err(at.error(0, ContractErrorKind::MissingSection("sources")));
        };
        let kinds = compile_kinds(&at, &sources.kinds)?;
        let act_kind = match &sources.acts {
            None => None,
            Some(kind) if kinds.get(kind.get_ref()).is_some() => Some(kind.get_ref().clone()),
            Some(kind) => {
                return Err(
                    at.error(kind.span().start, ContractErrorKind::UndeclaredActKind(text::visible(kind.get_ref())))
                );
            }
        };
        let score = score::compile(&at, &kinds, &raw.score)?;
        let guards = guard::compile(&at, &raw.guards)?;
        let actor_table = raw.actor.as_ref().map(|a| a.table.get_ref().as_str());
        let (currency, tables, schema_texts) = tables::compile_records(&at, raw.records.as_ref(), actor_table, files)?;
        let actor = compile_actor(&at, raw.actor.as_ref(), &tables)?;
        let expressions = expressions::compile_named(&at, &raw.expressions)?;
        let scope = operation::Scope {
            at: &at,
            kinds: &kinds,
            tables: &tables,
            has_actor: actor.is_some(),
            actor: actor.as_deref(),
            has_currency: currency.is_some(),
            named: &expressions,
        };
        let operations = operation::compile(&scope, &raw.operation)?;
        check_expressions(&at, &expressions, &operations)?;
        let cedar_schema = policy_schema::generate(&tables, actor.as_deref(), &operations);
        let (policies, policy_texts) = compile_policies(&at, raw.policies.as_ref(), files, &cedar_schema)?;
        if !operations.is_empty() && policies.is_empty() {
            return Err(at.error(0, ContractErrorKind::MissingSection("policies")));
        }
        let model = compile_model(&at, raw.model.as_ref())?;
        let outbound = claim::compile(&at, &raw.outbound, &tables, &operations)?;
        let limits = limits::compile(&at, raw.limits.as_ref())?;
        let mcp = mcp::compile(&at, raw.mcp.as_ref(), &kinds)?;
        // The schema files decide what a row is, as the policies decide what an act may do.
        let companions: Vec<(String, String, usize)> =
            policy_texts.into_iter().chain(schema_texts.into_iter().map(|(name, text)| (name, text, 0))).collect();
        let hash = contract_hash(text, &companions);
        Ok(Contract {
            origin: origin.to_owned(),
            kinds,
            act_kind,
            score,
            actor,
            currency,
            tables,
            operations,
            policies,
            guards,
            hash,
            model,
            outbound,
            cedar_schema,
            limits,
            expressions,
            mcp,
            fits: Default::default(),
        })
    }

    /// The source kind of acts that name none (`sources.acts`).
    pub fn act_kind(&self) -> Option<&str> {
        self.act_kind.as_deref()
    }

    /// What the MCP gateway passes through besides tools (`[mcp]`): nothing when undeclared.
    pub fn mcp(&self) -> &mcp::McpDeclared {
        &self.mcp
    }

    /// The records table whose rows are actors, if the contract declares one.
    pub fn actor_table(&self) -> Option<&str> {
        self.actor.as_deref()
    }

    /// The contract's currency (`[records] currency`): the currency of its records' money
    /// fields and the only one a money argument may name, since policies and effects compare
    /// and add the two in minor units.
    pub fn currency(&self) -> Option<money::Currency> {
        self.currency
    }

    /// The declared records tables, in contract order.
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }

    /// The table `name`.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The declared operations.
    pub fn operations(&self) -> &[Operation] {
        &self.operations
    }

    /// The operation `name`.
    pub fn operation(&self, name: &str) -> Option<&Operation> {
        self.operations.iter().find(|o| o.name == name)
    }

    /// The Cedar policies.
    pub fn policies(&self) -> &Policies {
        &self.policies
    }

    /// The rows found to fit their tables under this contract.
    pub fn fits(&self) -> &crate::records::FitCache {
        &self.fits
    }

    /// The Cedar schema generated from the contract, in Cedar's JSON schema format, that every
    /// policy was validated against (`warrant check --cedar-schema`; `docs/policy.md`).
    pub fn cedar_schema(&self) -> &serde_json::Value {
        &self.cedar_schema
    }

    /// A hash of the contract text, its policy files and its schema files, recorded with every
    /// turn.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The name the contract was loaded under (usually its path).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The declared source kinds.
    pub fn kinds(&self) -> &SourceKinds {
        &self.kinds
    }

    /// The guards (`[guards]`).
    pub fn guards(&self) -> &Guards {
        &self.guards
    }

    /// The score: scored clauses and the passive set.
    pub fn score(&self) -> &Score {
        &self.score
    }

    /// The `[model]` section: where model tasks run, their budgets, the turn-level checks.
    pub fn model(&self) -> &ModelConfig {
        &self.model
    }

    /// The outbound gate's section: claim kinds, paths, channels (`[outbound]`).
    pub fn outbound(&self) -> &Outbound {
        &self.outbound
    }

    /// The named CEL expressions (`[expressions]`), dependencies first.
    pub fn expressions(&self) -> &NamedExpressions {
        &self.expressions
    }

    /// How much one request may hold (`[limits]`, or the defaults).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
}

/// The named expressions against the operations: the names they read exist, and none is also
/// an argument's or a derived quantity's name.
fn check_expressions(
    at: &Locator<'_>,
    expressions: &NamedExpressions,
    operations: &[Operation],
) -> Result<(), ContractError> {
    let args: std::collections::BTreeSet<&str> =
        operations.iter().flat_map(|op| op.args.iter().map(|a| a.name.as_str())).collect();
    let mut taken = args.clone();
    taken.extend(operations.iter().flat_map(|op| op.derive.iter().map(|(n, _)| n.as_str())));
    expressions::check_named(at, expressions, &args, &taken)
}

/// The `[actor]` section: the table whose rows are the actors, which `[records]` must declare.
fn compile_actor(at: &Locator<'_>, raw: Option<&RawActor>, tables: &[Table]) -> Result<Option<String>, ContractError> {
    let actor = match raw {
        None => None,
        Some(actor) => {
            let table = actor.table.get_ref();
            if !tables.iter().any(|t| t.name == *table) {
                return Err(at.error(
                    actor.table.span().start,
                    ContractErrorKind::BadTable {
                        table: text::visible(table),
                        message: "the actor's table is not declared in `[records]`".into(),
                    },
                ));
            }
            Some(table.clone())
        }
    };
    Ok(actor)
}

/// The policy files as the contract's hash covers them: name, text, and the offset of the name.
type PolicyTexts = Vec<(String, String, usize)>;

/// The `[policies]` section: each Cedar file read through `files`, checked against the schema
/// generated from the contract; with the texts (name, text, offset) that the contract's hash covers.
fn compile_policies(
    at: &Locator<'_>,
    raw: Option<&RawPolicies>,
    files: &dyn ContractFiles,
    cedar_schema: &serde_json::Value,
) -> Result<(Policies, PolicyTexts), ContractError> {
    let mut policy_texts = Vec::new();
    let mut policy_files = Vec::new();
    if let Some(policies) = raw {
        for file in policies.files.get_ref() {
            let content = files.read(file.get_ref()).map_err(|message| {
                at.error(file.span().start, ContractErrorKind::BadPolicy { file: file.get_ref().clone(), message })
            })?;
            policy_files.push(PolicyFile { name: file.get_ref().clone(), text: content.clone() });
            policy_texts.push((file.get_ref().clone(), content, file.span().start));
        }
    }
    let policies = Policies::compile(&policy_files, cedar_schema).map_err(|e| match e {
        PolicyLoadError::At { file, offset, message } => {
            let (name, text) = policy_files.get(file).map_or(("", ""), |f| (f.name.as_str(), f.text.as_str()));
            // The error is in the policy file: it names that file, at its own line and column.
            let origin = companion_path(at.origin, name);
            Locator { origin: &origin, text }
                .error(offset, ContractErrorKind::BadPolicy { file: name.to_owned(), message })
        }
        PolicyLoadError::Schema(message) => {
            let offset = policy_texts.first().map_or(0, |p| p.2);
            at.error(
                offset,
                ContractErrorKind::BadPolicy {
                    file: String::new(),
                    message: format!("the Cedar schema generated from the contract is refused: {message}"),
                },
            )
        }
    })?;
    Ok((policies, policy_texts))
}

fn compile_kinds(at: &Locator<'_>, kinds: &Spanned<Vec<Spanned<String>>>) -> Result<SourceKinds, ContractError> {
    if kinds.get_ref().is_empty() {
        return Err(at.error(kinds.span().start, ContractErrorKind::EmptyKinds));
    }
    if kinds.get_ref().len() > MAX_SOURCE_KINDS {
        return Err(at.error(kinds.span().start, ContractErrorKind::TooManyKinds));
    }
    let mut names: Vec<Box<str>> = Vec::with_capacity(kinds.get_ref().len());
    for kind in kinds.get_ref() {
        let name = kind.get_ref();
        if !source::is_identifier(name) {
            return Err(at.error(kind.span().start, ContractErrorKind::BadName(text::visible(name))));
        }
        if names.iter().any(|n| **n == **name) {
            return Err(at.error(kind.span().start, ContractErrorKind::DuplicateKind(text::visible(name))));
        }
        names.push(name.as_str().into());
    }
    Ok(SourceKinds::new(names))
}

/// The path of a companion file as the loader was given the contract: `policies.cedar` of
/// `examples/retail/contract.toml` is `examples/retail/policies.cedar`.
fn companion_path(contract: &str, file: &str) -> String {
    match std::path::Path::new(contract).parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder.join(file).display().to_string(),
        _ => file.to_owned(),
    }
}

fn contract_hash(text: &str, policies: &[(String, String, usize)]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    for (name, content, _) in policies {
        hasher.update([0u8]);
        hasher.update(name.as_bytes());
        hasher.update([0u8]);
        hasher.update(content.as_bytes());
    }
    let digest = hasher.finalize();
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContract {
    sources: Option<RawSources>,
    #[serde(default)]
    score: RawScore,
    actor: Option<RawActor>,
    records: Option<tables::RawRecords>,
    policies: Option<RawPolicies>,
    #[serde(default)]
    operation: Vec<RawOperation>,
    #[serde(default)]
    expressions: std::collections::BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    guards: RawGuards,
    model: Option<RawModel>,
    #[serde(default)]
    outbound: RawOutbound,
    limits: Option<RawLimits>,
    mcp: Option<mcp::RawMcp>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawActor {
    table: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicies {
    files: Spanned<Vec<Spanned<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSources {
    kinds: Spanned<Vec<Spanned<String>>>,
    /// The source kind of the request's `acts` when an act names none.
    acts: Option<Spanned<String>>,
}

// The `[model]` section (docs/design.md §6): where the model tasks run and within what limits. The
// contract names the environment variable that holds the key, never the key; the engine reads
// the environment, whose `WARRANT_MODEL_*` settings override what is written here.

pub use warrant_vocab::model::{ModelConfig, TaskConfig};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    base_url: Option<Spanned<String>>,
    model: Option<Spanned<String>>,
    key_env: Option<Spanned<String>>,
    connect_timeout_ms: Option<Spanned<u64>>,
    turn_calls: Option<Spanned<u32>>,
    turn_tokens: Option<Spanned<u32>>,
    turn_deadline_ms: Option<Spanned<u64>>,
    #[serde(default)]
    tasks: std::collections::BTreeMap<Spanned<String>, RawTaskConfig>,
    #[serde(default)]
    checks: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTaskConfig {
    calls: Option<Spanned<u32>>,
    max_tokens: Option<Spanned<u32>>,
    timeout_ms: Option<Spanned<u64>>,
}

/// A limit of zero would fail every check it governs; the contract says so when it loads.
fn positive<T: Copy + Default + PartialEq>(
    at: &Locator<'_>,
    name: &str,
    value: Option<&Spanned<T>>,
) -> Result<Option<T>, ContractError> {
    match value {
        Some(v) if *v.get_ref() == T::default() => {
            Err(at.error(v.span().start, ContractErrorKind::BadModel(format!("`{name}` must be above 0"))))
        }
        other => Ok(other.map(|v| *v.get_ref())),
    }
}

/// An environment variable's name: ASCII capitals, digits and `_`, not starting with a digit.
/// A key pasted in its place does not look like one, and is refused before it is ever used.
fn is_env_name(name: &str) -> bool {
    name.bytes().next().is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

fn compile_model(at: &Locator<'_>, raw: Option<&RawModel>) -> Result<ModelConfig, ContractError> {
    let Some(raw) = raw else { return Ok(ModelConfig::default()) };
    let bad = |offset: usize, message: String| at.error(offset, ContractErrorKind::BadModel(message));
    if let Some(url) = &raw.base_url {
        let u = url.get_ref();
        if !(u.starts_with("http://") || u.starts_with("https://")) || u.chars().any(char::is_whitespace) {
            return Err(bad(
                url.span().start,
                format!("`base_url` `{}` is not an http:// or https:// URL", text::visible(u)),
            ));
        }
    }
    if let Some(model) = &raw.model
        && model.get_ref().trim().is_empty()
    {
        return Err(bad(model.span().start, "`model` is empty".into()));
    }
    if let Some(key) = &raw.key_env
        && !is_env_name(key.get_ref())
    {
        return Err(bad(
            key.span().start,
            "`key_env` names the environment variable that holds the key (e.g. `OPENAI_API_KEY`), never the key itself"
                .into(),
        ));
    }
    let mut tasks = std::collections::BTreeMap::new();
    for (name, task) in &raw.tasks {
        if crate::check::named_in(crate::check::MODEL_TASKS, name.get_ref()).is_none() {
            return Err(bad(
                name.span().start,
                format!(
                    "`{}` is not a model task; the tasks are {}",
                    text::visible(name.get_ref()),
                    crate::check::names(crate::check::MODEL_TASKS)
                ),
            ));
        }
        let config = TaskConfig {
            calls: positive(at, "calls", task.calls.as_ref())?,
            max_tokens: positive(at, "max_tokens", task.max_tokens.as_ref())?,
            timeout_ms: positive(at, "timeout_ms", task.timeout_ms.as_ref())?,
        };
        tasks.insert(name.get_ref().clone(), config);
    }
    let mut checks: Vec<String> = Vec::new();
    for check in &raw.checks {
        let name = check.get_ref();
        if crate::check::named_in(crate::check::TURN_CHECKS, name).is_none() {
            return Err(bad(
                check.span().start,
                format!(
                    "`{}` is not a turn-level check; the checks are {}",
                    text::visible(name),
                    crate::check::names(crate::check::TURN_CHECKS)
                ),
            ));
        }
        if checks.contains(name) {
            return Err(bad(check.span().start, format!("check `{name}` is named twice")));
        }
        checks.push(name.clone());
    }
    Ok(ModelConfig {
        base_url: raw.base_url.as_ref().map(|s| s.get_ref().clone()),
        model: raw.model.as_ref().map(|s| s.get_ref().clone()),
        key_env: raw.key_env.as_ref().map(|s| s.get_ref().clone()),
        connect_timeout_ms: positive(at, "connect_timeout_ms", raw.connect_timeout_ms.as_ref())?,
        turn_calls: positive(at, "turn_calls", raw.turn_calls.as_ref())?,
        turn_tokens: positive(at, "turn_tokens", raw.turn_tokens.as_ref())?,
        turn_deadline_ms: positive(at, "turn_deadline_ms", raw.turn_deadline_ms.as_ref())?,
        tasks,
        checks,
    })
}
