//! The contract's `[outbound]` section: the closed set of claim kinds a message may make, what
//! backs each one and the copy it may be stated in, the outbound paths with their fallback copy
//! per locale, and the channels messages leave by. It is checked when the contract loads, so the
//! gate never meets a claim kind without backing, copy with a placeholder that names nothing, or
//! a path without copy for a locale it may send in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toml::Spanned;

use crate::date::Locale;
use crate::error::{ContractError, ContractErrorKind, Locator};
use crate::money::Money;
use crate::operation::Operation;
use crate::records::Table;
use crate::source;
use crate::text;

/// The semantic check a path may declare: does the text claim more than its claims list?
pub const CLAIMS_COVERAGE: &str = crate::check::ModelTask::ClaimsCoverage.name();

/// The kind of an argument of a claim: the operation argument kinds that a statement of fact
/// can carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimArgKind {
    /// The key of a row of `table`.
    Record {
        /// The table.
        table: String,
    },
    /// One of a closed set of ids.
    Enum {
        /// The set.
        values: Vec<String>,
    },
    /// `{"amount","currency"}`, compared in minor units.
    Money,
    /// `YYYY-MM-DD`.
    Date,
    /// Free text, compared exactly with an event's argument.
    Text,
}

/// One argument of a claim kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimArg {
    /// Its name in the claim's object.
    pub name: String,
    /// Its kind.
    pub kind: ClaimArgKind,
}

/// What makes a claim true.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backing {
    /// A committed event of operation `op` whose arguments equal the claim's.
    Event {
        /// The operation (the event kind).
        op: String,
        /// Pairs of (the operation's argument, the claim's argument) that must be equal.
        args: Vec<(String, String)>,
        /// Whether the executor must also have reported the effect `done`: a committed event
        /// says warrant authorized the effect, not that it happened.
        done: bool,
    },
    /// A row of an authoritative record in a given state.
    Record {
        /// The table.
        table: String,
        /// The claim's argument holding the row's key.
        key: String,
        /// The row's field.
        field: String,
        /// The values of the field that back the claim.
        values: Vec<String>,
    },
}

/// A declared claim kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimKind {
    /// Its name (`order_cancelled`).
    pub name: String,
    /// Its arguments, in declaration order.
    pub args: Vec<ClaimArg>,
    /// What backs it.
    pub backing: Backing,
    /// Authored copy that states it, by locale; a locale without copy leaves the claim to the
    /// model rewrite.
    copy: BTreeMap<String, ClaimCopy>,
}

impl ClaimKind {
    /// The authored copy of this kind for `locale`, if the contract gives one.
    pub fn copy(&self, locale: &str) -> Option<&ClaimCopy> {
        self.copy.get(locale)
    }

    /// `claim` (a claim of this kind) stated in `locale`'s copy, or `None` when there is no
    /// copy for `locale` or an argument cannot be rendered.
    pub fn state(&self, claim: &Claim, locale: &str) -> Option<String> {
        self.copy(locale)?.render(claim)
    }
}

/// One piece of a claim kind's copy.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Authored words, as written (`{{` and `}}` already read as braces).
    Words(String),
    /// `{name}`: the claim's argument `name`, rendered by [`render_arg`].
    Arg(String),
}

/// A claim kind's copy for one locale: authored words with `{argument}` placeholders, checked
/// when the contract loads, so that every placeholder names an argument of the kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimCopy {
    pieces: Vec<Piece>,
}

impl ClaimCopy {
    /// The copy with each placeholder replaced by the claim's argument; `None` when an
    /// argument is missing or cannot be rendered (which a parsed claim never is).
    pub fn render(&self, claim: &Claim) -> Option<String> {
        let mut text = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Words(words) => text.push_str(words),
                Piece::Arg(name) => text.push_str(&render_arg(claim.args.get(name)?)?),
            }
        }
        Some(text)
    }
}

/// How an argument reads in composed copy. Record keys, enum ids, dates (`YYYY-MM-DD`) and text
/// are written exactly as the claim holds them, which backing made equal to the row's key or the
/// committed event's argument; money is written as `12.50 USD` (the amount with the currency's
/// decimal places, a space, the ISO 4217 code). Nothing is translated or reformatted per
/// locale, so the same claim always reads the same.
fn render_arg(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Object(money) => {
            let units = money.get("units")?.as_i64()?;
            let currency = crate::money::currency_from_code(money.get("currency")?.as_str()?).ok()?;
            Money::from_minor_units(units, currency).ok().map(|m| m.to_string())
        }
        _ => None,
    }
}

/// Reads `text` as copy for a claim with `args`; an error is the byte offset in `text` of the
/// fault and what it is.
fn parse_copy(text: &str, args: &[ClaimArg]) -> Result<ClaimCopy, (usize, String)> {
    let mut pieces = Vec::new();
    let mut words = String::new();
    let mut rest = text.char_indices().peekable();
    while let Some((at, c)) = rest.next() {
        match c {
            '{' if rest.peek().is_some_and(|&(_, next)| next == '{') => {
                rest.next();
                words.push('{');
            }
            '}' if rest.peek().is_some_and(|&(_, next)| next == '}') => {
                rest.next();
                words.push('}');
            }
            '{' => {
                let mut name = String::new();
                let mut closed = false;
                for (_, c) in rest.by_ref() {
                    if c == '}' {
                        closed = true;
                        break;
                    }
                    name.push(c);
                }
                if !closed {
                    return Err((at, "a `{` opens a placeholder that no `}` closes (write `{{` for a brace)".into()));
                }
                if !args.iter().any(|a| a.name == name) {
                    let known: Vec<String> = args.iter().map(|a| format!("`{}`", a.name)).collect();
                    let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
                    return Err((
                        at,
                        format!(
                            "the placeholder `{{{}}}` names no argument of the claim (its arguments: {known})",
                            text::visible(&name)
                        ),
                    ));
                }
                if !words.is_empty() {
                    pieces.push(Piece::Words(std::mem::take(&mut words)));
                }
                pieces.push(Piece::Arg(name));
            }
            '}' => return Err((at, "a `}` closes no placeholder (write `}}` for a brace)".into())),
            c => words.push(c),
        }
    }
    if !words.is_empty() {
        pieces.push(Piece::Words(words));
    }
    Ok(ClaimCopy { pieces })
}

/// The closed set of outbound paths (rule 3): every way a message reaches a customer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathName {
    /// The reply in a turn.
    Live,
    /// A message sent again.
    Retry,
    /// A follow-up due at a time, run by the scheduler.
    Scheduled,
    /// A digest of several updates.
    Digest,
    /// A message from a queue consumer.
    Queue,
}

impl PathName {
    /// Every path.
    pub const ALL: [PathName; 5] =
        [PathName::Live, PathName::Retry, PathName::Scheduled, PathName::Digest, PathName::Queue];

    /// Its name on the wire and in the contract.
    pub const fn as_str(self) -> &'static str {
        match self {
            PathName::Live => "live",
            PathName::Retry => "retry",
            PathName::Scheduled => "scheduled",
            PathName::Digest => "digest",
            PathName::Queue => "queue",
        }
    }

    /// The path named exactly `name`.
    pub fn from_name(name: &str) -> Option<PathName> {
        PathName::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

/// A declared outbound path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundPath {
    /// Which path.
    pub name: PathName,
    /// The channel its messages leave by.
    pub channel: String,
    /// Whether the claims-coverage check runs on drafts of this path.
    pub coverage: bool,
    fallback: BTreeMap<String, String>,
}

impl OutboundPath {
    /// The fallback copy for `locale`; every declared locale has one.
    pub fn fallback(&self, locale: &str) -> Option<&str> {
        self.fallback.get(locale).map(String::as_str)
    }
}

/// A channel messages leave by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// Its name.
    pub name: String,
    /// Its kind; only `webhook` exists.
    pub kind: String,
    /// The environment variable holding the webhook's URL (read by the dispatcher, never here).
    pub url_env: String,
}

/// The checked `[outbound]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outbound {
    locales: Vec<String>,
    claims: Vec<ClaimKind>,
    paths: Vec<OutboundPath>,
    channels: Vec<Channel>,
}

impl Outbound {
    /// The locales messages may be sent in.
    pub fn locales(&self) -> &[String] {
        &self.locales
    }

    /// The claim kind `name`.
    pub fn claim(&self, name: &str) -> Option<&ClaimKind> {
        self.claims.iter().find(|c| c.name == name)
    }

    /// Every claim kind.
    pub fn claims(&self) -> &[ClaimKind] {
        &self.claims
    }

    /// The path `name`, if declared.
    pub fn path(&self, name: PathName) -> Option<&OutboundPath> {
        self.paths.iter().find(|p| p.name == name)
    }

    /// Every path declared, in declaration order.
    pub fn paths(&self) -> &[OutboundPath] {
        &self.paths
    }

    /// The channel `name`.
    pub fn channel(&self, name: &str) -> Option<&Channel> {
        self.channels.iter().find(|c| c.name == name)
    }

    /// Every channel, in declaration order.
    pub fn channels(&self) -> &[Channel] {
        &self.channels
    }
}

/// `[outbound]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOutbound {
    locales: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    claim: Vec<RawClaim>,
    #[serde(default)]
    path: Vec<RawPath>,
    #[serde(default)]
    channel: Vec<RawChannel>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaim {
    name: Spanned<String>,
    #[serde(default)]
    args: BTreeMap<String, Spanned<RawClaimArg>>,
    backed_by: Spanned<RawBacking>,
    #[serde(default)]
    copy: BTreeMap<String, Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaimArg {
    kind: String,
    table: Option<String>,
    values: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBacking {
    event: Option<String>,
    #[serde(default)]
    args: BTreeMap<String, String>,
    outcome: Option<String>,
    record: Option<String>,
    key: Option<String>,
    field: Option<String>,
    values: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPath {
    name: Spanned<String>,
    channel: Spanned<String>,
    #[serde(default)]
    checks: Vec<Spanned<String>>,
    fallback: Spanned<BTreeMap<String, Spanned<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChannel {
    name: Spanned<String>,
    kind: Spanned<String>,
    url_env: Spanned<String>,
}

fn bad(at: &Locator<'_>, offset: usize, what: &str, message: String) -> ContractError {
    at.error(offset, ContractErrorKind::BadOutbound { what: what.to_owned(), message })
}

/// One `[[outbound.channel]]`: a webhook whose URL is in the named environment variable.
fn compile_channel(at: &Locator<'_>, raw_channel: &RawChannel, out: &Outbound) -> Result<Channel, ContractError> {
    let name = raw_channel.name.get_ref();
    let what = format!("channel `{}`", text::visible(name));
    if !source::is_identifier(name) {
        return Err(at.error(raw_channel.name.span().start, ContractErrorKind::BadName(text::visible(name))));
    }
    if out.channel(name).is_some() {
        return Err(bad(at, raw_channel.name.span().start, &what, "is declared twice".into()));
    }
    if raw_channel.kind.get_ref() != "webhook" {
        return Err(bad(
            at,
            raw_channel.kind.span().start,
            &what,
            format!("kind `{}` is not `webhook`", text::visible(raw_channel.kind.get_ref())),
        ));
    }
    let env = raw_channel.url_env.get_ref();
    let env_ok = env.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && env.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if !env_ok {
        return Err(bad(
            at,
            raw_channel.url_env.span().start,
            &what,
            format!("`url_env` `{}` is not an environment variable name (A-Z, 0-9, `_`)", text::visible(env)),
        ));
    }
    Ok(Channel { name: name.clone(), kind: "webhook".into(), url_env: env.clone() })
}

/// One `[[outbound.path]]`: its channel, its checks, and fallback copy for every locale.
fn compile_path(at: &Locator<'_>, raw_path: &RawPath, out: &Outbound) -> Result<OutboundPath, ContractError> {
    let name = raw_path.name.get_ref();
    let Some(path) = PathName::from_name(name) else {
        return Err(bad(
            at,
            raw_path.name.span().start,
            "path",
            format!("`{}` is not one of `live`, `retry`, `scheduled`, `digest`, `queue`", text::visible(name)),
        ));
    };
    let what = format!("path `{name}`");
    if out.path(path).is_some() {
        return Err(bad(at, raw_path.name.span().start, &what, "is declared twice".into()));
    }
    let channel = raw_path.channel.get_ref();
    if out.channel(channel).is_none() {
        return Err(bad(
            at,
            raw_path.channel.span().start,
            &what,
            format!("channel `{}` is not declared", text::visible(channel)),
        ));
    }
    let mut coverage = false;
    for check in &raw_path.checks {
        if check.get_ref() != CLAIMS_COVERAGE || coverage {
            return Err(bad(
                at,
                check.span().start,
                &what,
                format!("check `{}` is not `{CLAIMS_COVERAGE}` (once)", text::visible(check.get_ref())),
            ));
        }
        coverage = true;
    }
    let mut fallback = BTreeMap::new();
    for (locale, copy) in raw_path.fallback.get_ref() {
        if !out.locales.contains(locale) {
            return Err(bad(
                at,
                copy.span().start,
                &what,
                format!("fallback copy for `{}`, which `outbound.locales` does not declare", text::visible(locale)),
            ));
        }
        if copy.get_ref().trim().is_empty() {
            return Err(bad(at, copy.span().start, &what, format!("the fallback copy for `{locale}` is empty")));
        }
        fallback.insert(locale.clone(), copy.get_ref().clone());
    }
    if let Some(missing) = out.locales.iter().find(|l| !fallback.contains_key(*l)) {
        return Err(bad(
            at,
            raw_path.fallback.span().start,
            &what,
            format!("no fallback copy for the locale `{missing}`"),
        ));
    }
    Ok(OutboundPath { name: path, channel: channel.clone(), coverage, fallback })
}

/// Compiles `[outbound]` against the records and operations it refers to.
pub(crate) fn compile(
    at: &Locator<'_>,
    raw: &RawOutbound,
    tables: &[Table],
    operations: &[Operation],
) -> Result<Outbound, ContractError> {
    let mut out = Outbound::default();
    if let Some(locales) = &raw.locales {
        for locale in locales.get_ref() {
            let tag = locale.get_ref();
            if Locale::from_tag(tag).is_err() {
                return Err(bad(
                    at,
                    locale.span().start,
                    "locales",
                    format!("`{}` is not one of `en-US`, `en-GB`, `ko-KR`", text::visible(tag)),
                ));
            }
            if out.locales.contains(tag) {
                return Err(bad(at, locale.span().start, "locales", format!("`{tag}` is listed twice")));
            }
            out.locales.push(tag.clone());
        }
    }
    for raw_channel in &raw.channel {
        let channel = compile_channel(at, raw_channel, &out)?;
        out.channels.push(channel);
    }
    for raw_claim in &raw.claim {
        let claim = compile_claim(at, raw_claim, tables, operations, &out.locales)?;
        if out.claim(&claim.name).is_some() {
            return Err(bad(
                at,
                raw_claim.name.span().start,
                &format!("claim `{}`", claim.name),
                "is declared twice".into(),
            ));
        }
        out.claims.push(claim);
    }
    for raw_path in &raw.path {
        let path = compile_path(at, raw_path, &out)?;
        out.paths.push(path);
    }
    if !out.paths.is_empty() && out.locales.is_empty() {
        return Err(at.error(
            0,
            ContractErrorKind::BadOutbound {
                what: "locales".into(),
                message: "paths are declared but `outbound.locales` is empty".into(),
            },
        ));
    }
    Ok(out)
}

/// One argument of a claim kind, with its kind.
fn compile_claim_arg(
    at: &Locator<'_>,
    what: &str,
    tables: &[Table],
    arg_name: &str,
    raw_arg: &Spanned<RawClaimArg>,
) -> Result<ClaimArg, ContractError> {
    let offset = raw_arg.span().start;
    let raw_arg = raw_arg.get_ref();
    if !source::is_identifier(arg_name) || arg_name == "claim" {
        return Err(bad(
            at,
            offset,
            what,
            format!("argument `{}` is not a name (and `claim` is reserved)", text::visible(arg_name)),
        ));
    }
    let kind = match (raw_arg.kind.as_str(), &raw_arg.table, &raw_arg.values) {
        ("record", Some(table), None) => {
            if !tables.iter().any(|t| t.name == *table) {
                return Err(bad(
                    at,
                    offset,
                    what,
                    format!("argument `{arg_name}` names the undeclared table `{}`", text::visible(table)),
                ));
            }
            ClaimArgKind::Record { table: table.clone() }
        }
        ("enum", None, Some(values)) if !values.is_empty() => ClaimArgKind::Enum { values: values.clone() },
        ("money", None, None) => ClaimArgKind::Money,
        ("date", None, None) => ClaimArgKind::Date,
        ("text", None, None) => ClaimArgKind::Text,
        (kind, _, _) => {
            return Err(bad(
                at,
                offset,
                what,
                format!(
                    "argument `{arg_name}`: kind `{}` is not `record` (with `table`), `enum` (with `values`), `money`, `date` or `text`",
                    text::visible(kind)
                ),
            ));
        }
    };
    Ok(ClaimArg { name: arg_name.to_owned(), kind })
}

/// `backed_by.event`: a committed event of the operation, its arguments matched with the claim's.
fn event_backing(
    at: &Locator<'_>,
    what: &str,
    offset: usize,
    backing: &RawBacking,
    operations: &[Operation],
    args: &[ClaimArg],
) -> Result<Backing, ContractError> {
    let RawBacking { event: Some(op), args: pairs, outcome, .. } = backing else {
        return Err(bad(at, offset, what, "`backed_by.event` is missing".into()));
    };
    let claim_arg = |arg: &str| args.iter().find(|a| a.name == arg);
    let Some(operation) = operations.iter().find(|o| o.name == *op) else {
        return Err(bad(
            at,
            offset,
            what,
            format!("`backed_by.event` names the undeclared operation `{}`", text::visible(op)),
        ));
    };
    let mut matched = Vec::new();
    for (op_arg, arg) in pairs {
        if operation.arg(op_arg).is_none() {
            return Err(bad(at, offset, what, format!("operation `{op}` has no argument `{}`", text::visible(op_arg))));
        }
        if claim_arg(arg).is_none() {
            return Err(bad(
                at,
                offset,
                what,
                format!(
                    "`backed_by.args.{op_arg}` names `{}`, which is not an argument of the claim",
                    text::visible(arg)
                ),
            ));
        }
        matched.push((op_arg.clone(), arg.clone()));
    }
    if let Some(unmatched) = args.iter().find(|a| !matched.iter().any(|(_, c)| *c == a.name)) {
        return Err(bad(
            at,
            offset,
            what,
            format!("argument `{}` is not matched with any argument of `{op}`", unmatched.name),
        ));
    }
    let done = match outcome.as_deref() {
        None => false,
        Some("done") => true,
        Some(other) => {
            return Err(bad(at, offset, what, format!("`backed_by.outcome` `{}` is not `done`", text::visible(other))));
        }
    };
    Ok(Backing::Event { op: op.clone(), args: matched, done })
}

/// A claim kind's `backed_by`: a committed event with equal arguments, or a row in a declared
/// state.
fn compile_backing(
    at: &Locator<'_>,
    what: &str,
    offset: usize,
    backing: &RawBacking,
    operations: &[Operation],
    args: &[ClaimArg],
) -> Result<Backing, ContractError> {
    let claim_arg = |arg: &str| args.iter().find(|a| a.name == arg);
    let backing = match backing {
        RawBacking { event: Some(_), record: None, key: None, field: None, values: None, .. } => {
            event_backing(at, what, offset, backing, operations, args)?
        }
        RawBacking {
            event: None,
            args: pairs,
            outcome: None,
            record: Some(table),
            key: Some(key),
            field: Some(field),
            values: Some(values),
        } if pairs.is_empty() => {
            match claim_arg(key).map(|a| &a.kind) {
                Some(ClaimArgKind::Record { table: t }) if t == table => {}
                _ => {
                    return Err(bad(
                        at,
                        offset,
                        what,
                        format!("`backed_by.key` must name a `record` argument of table `{}`", text::visible(table)),
                    ));
                }
            }
            // Backing by a row checks the key and the row's state, nothing else: an argument
            // beside the key would be stated (in copy, to the rewrite) without anything backing it.
            if let Some(unchecked) = args.iter().find(|a| a.name != *key) {
                return Err(bad(
                    at,
                    offset,
                    what,
                    format!(
                        "argument `{}` is not checked by `backed_by`: a claim backed by a record has only its key",
                        unchecked.name
                    ),
                ));
            }
            if field.is_empty() || values.is_empty() {
                return Err(bad(at, offset, what, "`backed_by.field` and `backed_by.values` must not be empty".into()));
            }
            Backing::Record { table: table.clone(), key: key.clone(), field: field.clone(), values: values.clone() }
        }
        _ => {
            return Err(bad(at, offset, what, "`backed_by` is either `event` (with `args`, optional `outcome`) or `record` with `key`, `field` and `values`".into()));
        }
    };
    Ok(backing)
}

/// A claim backed by a row's field names a field its table's schema declares, and values that
/// field can hold.
fn backing_fits_schema(backing: &Backing, tables: &[Table]) -> Result<(), String> {
    let Backing::Record { table, field, values, .. } = backing else { return Ok(()) };
    let Some(row) = tables.iter().find(|t| t.name == *table).and_then(|t| t.schema.as_ref()) else {
        return Ok(());
    };
    let declared = crate::schema::resolve(row, table, std::slice::from_ref(field))
        .map_err(|e| format!("`backed_by.field`: {e}"))?;
    for value in values {
        crate::schema::check_value(declared, field, &serde_json::Value::String(value.clone()), None)
            .map_err(|m| format!("`backed_by.values`: `{}` {}", m.path, m.message))?;
    }
    Ok(())
}

fn compile_claim(
    at: &Locator<'_>,
    raw: &RawClaim,
    tables: &[Table],
    operations: &[Operation],
    locales: &[String],
) -> Result<ClaimKind, ContractError> {
    let name = raw.name.get_ref();
    if !source::is_identifier(name) {
        return Err(at.error(raw.name.span().start, ContractErrorKind::BadName(text::visible(name))));
    }
    let what = format!("claim `{name}`");
    let mut args = Vec::new();
    for (arg_name, raw_arg) in &raw.args {
        args.push(compile_claim_arg(at, &what, tables, arg_name, raw_arg)?);
    }
    let offset = raw.backed_by.span().start;
    let backing = raw.backed_by.get_ref();
    let backing = compile_backing(at, &what, offset, backing, operations, &args)?;
    backing_fits_schema(&backing, tables).map_err(|message| bad(at, offset, &what, message))?;
    let mut copy = BTreeMap::new();
    for (locale, written) in &raw.copy {
        let offset = written.span().start;
        if !locales.contains(locale) {
            return Err(bad(
                at,
                offset,
                &what,
                format!("copy for `{}`, which `outbound.locales` does not declare", text::visible(locale)),
            ));
        }
        if written.get_ref().trim().is_empty() {
            return Err(bad(at, offset, &what, format!("the copy for `{locale}` is empty")));
        }
        let parsed = parse_copy(written.get_ref(), &args)
            .map_err(|(fault, message)| bad(at, copy_offset(at, written, fault), &what, message))?;
        copy.insert(locale.clone(), parsed);
    }
    Ok(ClaimKind { name: name.clone(), args, backing, copy })
}

/// The offset in the contract of byte `fault` of the copy `written`: exact when the string is
/// written without escapes (its source is the value between quotes), its opening quote otherwise.
fn copy_offset(at: &Locator<'_>, written: &Spanned<String>, fault: usize) -> usize {
    let span = written.span();
    let source = at.text.get(span.start + 1..span.end.saturating_sub(1));
    if source == Some(written.get_ref().as_str()) { span.start + 1 + fault } else { span.start }
}

/// A claim as a draft makes it, checked against its kind: every declared argument present, no
/// other, each of its kind. Arguments are kept in the form events record them (record keys and
/// enum ids as strings, money as `{"units","currency"}`), so backing is exact equality.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claim {
    /// Its kind.
    pub claim: String,
    /// Its arguments, by name.
    pub args: BTreeMap<String, Value>,
}

impl Claim {
    /// The claim as the wire writes it: `{"claim": kind, ...args}`.
    pub fn to_json(&self) -> Value {
        let mut object = serde_json::Map::new();
        object.insert("claim".into(), Value::String(self.claim.clone()));
        for (name, value) in &self.args {
            object.insert(name.clone(), value.clone());
        }
        Value::Object(object)
    }
}

/// Reads one claim; the error names the field at fault below `field` and says what is wrong.
pub fn parse_claim(outbound: &Outbound, value: &Value, field: &str) -> Result<Claim, (String, String)> {
    let Value::Object(object) = value else {
        return Err((field.to_owned(), "a claim is an object".into()));
    };
    let Some(Value::String(name)) = object.get("claim") else {
        return Err((format!("{field}.claim"), "`claim` must name a claim kind".into()));
    };
    let Some(kind) = outbound.claim(name) else {
        return Err((
            format!("{field}.claim"),
            format!("`{}` is not a claim kind of the contract", text::visible(name)),
        ));
    };
    if let Some(extra) = object.keys().find(|k| *k != "claim" && !kind.args.iter().any(|a| a.name == **k)) {
        return Err((format!("{field}.{extra}"), format!("claim `{name}` has no argument `{}`", text::visible(extra))));
    }
    let mut args = BTreeMap::new();
    for arg in &kind.args {
        let at = format!("{field}.{}", arg.name);
        let Some(given) = object.get(&arg.name) else {
            return Err((at, "missing".into()));
        };
        let value = match (&arg.kind, given) {
            (ClaimArgKind::Record { .. } | ClaimArgKind::Text, Value::String(s)) if !s.is_empty() => given.clone(),
            (ClaimArgKind::Enum { values }, Value::String(s)) if values.contains(s) => given.clone(),
            (ClaimArgKind::Date, Value::String(s)) if s.parse::<jiff::civil::Date>().is_ok() => given.clone(),
            (ClaimArgKind::Money, _) => {
                let money = Money::from_json(given).map_err(|e| (at.clone(), e.to_string()))?;
                let units = money.to_minor_units().map_err(|e| (at.clone(), e.to_string()))?;
                serde_json::json!({"units": units, "currency": money.currency().code()})
            }
            (kind, _) => {
                return Err((at, format!("not a valid value of kind {}", kind_name(kind))));
            }
        };
        args.insert(arg.name.clone(), value);
    }
    Ok(Claim { claim: name.clone(), args })
}

fn kind_name(kind: &ClaimArgKind) -> &'static str {
    match kind {
        ClaimArgKind::Record { .. } => "`record` (a non-empty key)",
        ClaimArgKind::Enum { .. } => "`enum` (one of its declared values)",
        ClaimArgKind::Money => "`money`",
        ClaimArgKind::Date => "`date` (YYYY-MM-DD)",
        ClaimArgKind::Text => "`text` (non-empty)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(names: &[&str]) -> Vec<ClaimArg> {
        names.iter().map(|n| ClaimArg { name: (*n).to_owned(), kind: ClaimArgKind::Text }).collect()
    }

    fn claim(args: Value) -> Claim {
        let args = args.as_object().cloned().unwrap_or_default().into_iter().collect();
        Claim { claim: "k".into(), args }
    }

    #[test]
    fn copy_renders_each_argument_as_the_claim_holds_it_and_money_as_amount_and_code() {
        let copy =
            parse_copy("Refund of {amount} for {order} on {{day}} {day}.", &args(&["amount", "order", "day"])).unwrap();
        let stated = copy.render(&claim(serde_json::json!({
            "amount": {"units": 1250, "currency": "USD"}, "order": "#W1", "day": "2026-12-01"
        })));
        assert_eq!(stated.as_deref(), Some("Refund of 12.50 USD for #W1 on {day} 2026-12-01."));
        // A won has no minor unit; a missing or unreadable argument renders nothing at all.
        let won = copy.render(&claim(serde_json::json!({
            "amount": {"units": 5000, "currency": "KRW"}, "order": "#W1", "day": "2026-12-01"
        })));
        assert_eq!(won.as_deref(), Some("Refund of 5000 KRW for #W1 on {day} 2026-12-01."));
        assert_eq!(copy.render(&claim(serde_json::json!({"order": "#W1", "day": "2026-12-01"}))), None);
        assert_eq!(copy.render(&claim(serde_json::json!({"amount": 3, "order": "#W1", "day": "x"}))), None);
    }

    #[test]
    fn a_fault_in_copy_is_found_at_its_byte() {
        let known = args(&["order"]);
        assert_eq!(parse_copy("주문 {order} {item}", &known).map_err(|(at, _)| at), Err("주문 {order} ".len()));
        assert_eq!(parse_copy("{order", &known).map_err(|(at, _)| at), Err(0));
        assert_eq!(parse_copy("a } b", &known).map_err(|(at, _)| at), Err(2));
        assert!(parse_copy("{{order}} and {order}", &known).is_ok());
    }
}
