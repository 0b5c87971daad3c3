//! The one list of reason codes. Every verdict, rejection and input error warrant reports names
//! its cause with one of these stable `snake_case` codes; users' tools match on them, so a code
//! is never renamed or reused, only added.
//!
//! `warrant reasons` prints this list with the documentation of each code.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! reason_codes {
    ($( $(#[doc = $doc:literal])+ $variant:ident => $code:literal, )+) => {
        /// A stable reason code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum ReasonCode {
            $( $(#[doc = $doc])+ $variant, )+
        }

        impl ReasonCode {
            /// Every code, in the order of this list.
            pub const ALL: &'static [ReasonCode] = &[ $( ReasonCode::$variant, )+ ];

            /// The code as it appears on the wire.
            pub const fn as_str(self) -> &'static str {
                match self { $( ReasonCode::$variant => $code, )+ }
            }

            /// What the code means, as documented here.
            pub fn description(self) -> &'static str {
                match self { $( ReasonCode::$variant => concat!($($doc, "\n"),+).trim(), )+ }
            }

            /// The code whose wire form is `code`.
            pub fn from_code(code: &str) -> Option<ReasonCode> {
                match code { $( $code => Some(ReasonCode::$variant), )+ _ => None }
            }
        }
    };
}

reason_codes! {
    /// A sentence of the reply is neither a scored clause nor a passive clause, so the reply
    /// performs no operation at all (rule 1).
    UnregisteredSentence => "unregistered_sentence",
    /// A sentence is a scored clause that the contract limits to other source kinds, so the
    /// reply performs no operation.
    ClauseNotPermittedForSource => "clause_not_permitted_for_source",
    /// The reply has no sentence (empty or only white space), so it performs no operation.
    EmptyResponse => "empty_response",
    /// The entry names a source kind the contract does not declare; an input error, never a
    /// guess.
    UnknownSourceKind => "unknown_source_kind",
    /// A line of JSON input could not be parsed, or has a missing, unknown or mistyped field.
    InvalidInput => "invalid_input",
    /// The act names an operation the contract does not declare.
    UnknownOperation => "unknown_operation",
    /// The operation exists but may not be proposed by this source kind.
    OperationNotOffered => "operation_not_offered",
    /// An MCP resource or prompt the contract's `[mcp]` section does not declare: the gateway
    /// neither lists it nor forwards a request for it.
    UnknownResource => "unknown_resource",
    /// The act passes an argument the operation does not declare.
    UnknownArgument => "unknown_argument",
    /// A required argument is missing; a question to the user can supply it.
    MissingArgument => "missing_argument",
    /// An argument has the wrong JSON type for its declared kind.
    WrongArgumentType => "wrong_argument_type",
    /// An option or enum id outside its declared closed set.
    NotInClosedSet => "not_in_closed_set",
    /// A record handle names no existing row, or a row the actor may not see (the contract's
    /// `owner`): the two are refused alike, so a refusal never tells whether another actor's
    /// row exists.
    UnknownRecord => "unknown_record",
    /// A row changed after it was read: the revision the act (or the confirmation) saw is not
    /// current, or another commit won the race.
    StaleRevision => "stale_revision",
    /// A row named by a list of handles lacks a field value the operation requires (e.g. an
    /// item that is not available).
    RequirementUnmet => "requirement_unmet",
    /// A member id is not in the collection it must belong to (an item not in the order, a
    /// payment method that is not the actor's), or is named more often than it occurs.
    NotAMember => "not_a_member",
    /// Two paired lists differ in length.
    ListLengthMismatch => "list_length_mismatch",
    /// A paired row differs from its pair in the field that must be the same (a new item of
    /// another product).
    PairMismatch => "pair_mismatch",
    /// A value an act gives beside a record it names (a flight's `origin` beside its
    /// `flight_number`) is not what that record holds in the field the contract declares it
    /// `equals`; refused, naming the value's field.
    RecordFieldMismatch => "record_field_mismatch",
    /// A text pointer does not slice the user entry it points into, or its copy does not narrow
    /// it; the model is asked for a repair.
    PointerInvalid => "pointer_invalid",
    /// A text pointer's `entry` names no entry of the turn, or an entry whose source kind is not
    /// `user`: a value may come only from the user's own words, so the act is refused.
    PointerEntryInvalid => "pointer_entry_invalid",
    /// A DateExpr is malformed or does not evaluate with the turn's clock.
    DateInvalid => "date_invalid",
    /// A Money value is malformed, of an unknown currency, or finer than its minor units.
    MoneyInvalid => "money_invalid",
    /// A Money argument names a currency other than the contract's (`[records] currency`);
    /// its minor units would be compared with amounts of another currency, so it is refused.
    CurrencyNotAccepted => "currency_not_accepted",
    /// An integer argument is outside its declared bounds.
    OutOfBounds => "out_of_bounds",
    /// A `string` argument has more characters than its `max_length`.
    StringTooLong => "string_too_long",
    /// A `string` argument does not match its `pattern` as a whole.
    PatternMismatch => "pattern_mismatch",
    /// An `objects` argument has fewer elements than its `min_items` (one unless declared).
    TooFewItems => "too_few_items",
    /// An `objects` argument has more elements than its `max_items`.
    TooManyItems => "too_many_items",
    /// The actor is not a row of the contract's actor table.
    UnknownActor => "unknown_actor",
    /// A stored fact could not be read; the act fails closed.
    FactUnavailable => "fact_unavailable",
    /// A Cedar policy forbids the act; `policies` names the rules.
    ForbiddenByPolicy => "forbidden_by_policy",
    /// No Cedar policy permits the act.
    NoPolicyPermits => "no_policy_permits",
    /// A policy could not be evaluated (e.g. a missing attribute); the act fails closed.
    PolicyError => "policy_error",
    /// The operation is consequential: it waits for the user's confirmation.
    ConfirmationRequired => "confirmation_required",
    /// An effect's record changes cannot be applied to the rows as they are.
    EffectInapplicable => "effect_inapplicable",
    /// An effect's record changes would leave a row that does not fit its table's schema (a
    /// field of the wrong kind, an enum value not declared, a field not declared): the act is
    /// refused and nothing is written; a consequential act is refused so before it is held.
    EffectBreaksSchema => "effect_breaks_schema",
    /// An effect step creates a row under a key (minted from the turn, or an argument's value)
    /// that a row of its table already holds: the act is refused and nothing is written.
    RecordExists => "record_exists",
    /// A CEL expression of the contract (a derived quantity, a named expression, a computed
    /// effect value) failed to evaluate: a missing field, a division by zero, an integer
    /// overflow, operands of the wrong types, an empty list where one value was needed, or
    /// more input than an expression may read. The act is refused.
    ExpressionFailed => "expression_failed",
    /// A CEL expression evaluated to a value of another type than the contract declares for
    /// it (`type`), so it is not used. The act is refused.
    ExpressionWrongType => "expression_wrong_type",
    /// A CEL expression follows a reference (`row('TABLE', key)`) to a row that does not exist,
    /// or that the actor may not see (to them it does not exist either). The detail names the
    /// table and the key; the act is refused.
    RelatedRowMissing => "related_row_missing",
    /// A CEL expression follows references beyond the bounds every evaluation keeps: `row(…)`
    /// nested deeper than 3 (a key read from a row reached by another `row`), or more than 64
    /// rows reached. The act is refused.
    RelatedRowsLimit => "related_rows_limit",
    /// An answer names no interaction of this conversation issued to this actor: none with
    /// that id, one of another conversation, or one issued to another actor are refused alike.
    UnknownInteraction => "unknown_interaction",
    /// No longer emitted: an answer from another actor than the one the interaction was issued
    /// to is refused as `unknown_interaction`, so that it cannot learn the interaction exists.
    /// Kept because codes are never removed.
    InteractionOfAnotherActor => "interaction_of_another_actor",
    /// The interaction was already answered.
    InteractionClosed => "interaction_closed",
    /// The answer's option id is not one the interaction offered.
    UnknownOption => "unknown_option",
    /// The user declined the confirmation; the held act does not happen.
    DeclinedByUser => "declined_by_user",
    /// A reply sentence is a bare announcement of a tool action (a member of the announcement
    /// guard's closed set of shapes, unframed) and no call to that tool happened in the turn.
    AnnouncementWithoutCall => "announcement_without_call",
    /// A promotion is refused: fewer audited findings than the bar asks for.
    PromotionTooFewAudits => "promotion_too_few_audits",
    /// A promotion is refused: the audited false-positive rate is not under the bar.
    PromotionFalsePositiveRate => "promotion_false_positive_rate",
    /// A promotion is refused: the adversarial corpus failed more cases than the bar allows.
    PromotionCorpusFailed => "promotion_corpus_failed",
    /// A stored promotion does not hold: it was earned by another version of what it promotes,
    /// so that thing runs advisory again.
    PromotionVersionMismatch => "promotion_version_mismatch",
    /// A semantic check (a model task) has no answer: none was supplied, or it was never run.
    /// A check that did not finish counts as failed; the user is asked instead.
    CheckUnfinished => "check_unfinished",
    /// The turn's or the task's model budget (calls, tokens, deadline) ran out before the
    /// check finished; it counts as failed and the user is asked instead.
    CheckBudgetExhausted => "check_budget_exhausted",
    /// The model provider did not answer a check in time; it counts as failed and the user is
    /// asked instead.
    CheckTimeout => "check_timeout",
    /// The model provider could not be reached, or answered with an error (also after one
    /// retry in place); the check counts as failed and the user is asked instead.
    CheckProviderFailed => "check_provider_failed",
    /// The model's answer to a check did not fit the task's schema, also after one repair
    /// round quoting the error; the check counts as failed and the user is asked instead.
    CheckAnswerInvalid => "check_answer_invalid",
    /// The `value_stated` check found that the pointed words are not the value the user gave
    /// (seed 004: "the name needs changing" does not name anything); the user is asked.
    ValueNotStated => "value_not_stated",
    /// A semantic check asks the proposing model to repair the value; the user is asked
    /// meanwhile, nothing commits.
    CheckRepair => "check_repair",
    /// A semantic check cannot tell; the user is asked.
    CheckUnsure => "check_unsure",
    /// An audit names no finding of this store (its id is unknown, or the contract declares
    /// no guard); nothing is written.
    UnknownFinding => "unknown_finding",
    /// The finding was audited before: a finding has one label, and a second audit writes
    /// nothing (the answer names the stored label).
    FindingAlreadyAudited => "finding_already_audited",
    /// The audit's label does not fit the finding's kind: a flag is a true or false positive,
    /// a sampled unflagged reply is a miss or clean.
    AuditLabelDoesNotFit => "audit_label_does_not_fit",
    /// A request names a guard the contract does not declare.
    UnknownGuard => "unknown_guard",
    /// The `locate` check found no words of the user's message that give the plain value an
    /// agent proposed, or gave no pointer; the user is asked for the value.
    ValueNotLocated => "value_not_located",
    /// The `uncovered_request` check found a request in the user's message that no act of the
    /// turn covers; every act that would commit or be held is asked about instead.
    RequestUncovered => "request_uncovered",
    /// A draft's claim does not parse against its claim kind (unknown kind, missing, extra or
    /// ill-typed argument); the field names it. The draft goes to the rewrite, or to the
    /// fallback when no claim of it is backed.
    ClaimInvalid => "claim_invalid",
    /// A draft's claim is backed by no committed event and no record in the declared state; the
    /// draft goes to the rewrite, or to the fallback when no claim of it is backed.
    ClaimUnbacked => "claim_unbacked",
    /// The facts that would back a claim could not be read; the claim counts as unbacked.
    ClaimUnverifiable => "claim_unverifiable",
    /// A claim names a row that the message's recipient (its `actor`) may not see, or that
    /// does not exist; the two are not told apart. The claim is unbacked, and the row is never
    /// given to a model.
    ClaimNotVisible => "claim_not_visible",
    /// The claims-coverage check found the text stating more than its claims list; the draft
    /// goes to the rewrite.
    CoverageBlocked => "coverage_blocked",
    /// The claims-coverage check cannot tell; the draft goes to the rewrite.
    CoverageUnsure => "coverage_unsure",
    /// The claims-coverage check could not run (no model, budget, provider, invalid answer);
    /// it counts as failed, never as passed.
    CoverageFailed => "coverage_failed",
    /// The rewrite could not run or gave no usable text; the fallback copy goes out.
    RewriteFailed => "rewrite_failed",
    /// The rewrite's text claims more than the verified facts (or its coverage check could not
    /// tell or run); the fallback copy goes out.
    RewriteUnbacked => "rewrite_unbacked",
    /// The outbound path's deterministic fallback copy went out instead of the draft.
    FallbackSent => "fallback_sent",
    /// No claim of the draft is backed (none listed, none valid, or none true), so there is
    /// nothing true to rewrite from: no model rewrite is asked and the fallback copy goes out.
    NothingBacked => "nothing_backed",
    /// The rewrite was composed by code from the authored copy of the backed claims' kinds, in
    /// the draft's order; no model wrote it, and it states those claims and nothing else.
    RewriteComposed => "rewrite_composed",
    /// The turn's key (its conversation and `turn`) was decided before for another request;
    /// the request is refused and nothing happens. The same request sent again is answered
    /// with its recorded response, marked `"repeated": true`.
    TurnKeyReused => "turn_key_reused",
    /// A request is over one of the contract's `[limits]` (acts, answers, calls or entries per
    /// turn, claims per draft, characters per entry or per draft); the message names the limit.
    /// The request is refused whole and nothing is decided. The announcement guard reports at
    /// most `limits.findings_per_reply` findings of one reply.
    LimitExceeded => "limit_exceeded",
    /// The request has no API key, or a key that is not valid.
    Unauthorized => "unauthorized",
    /// Commits kept conflicting with other requests; nothing was committed. Retry.
    Contention => "contention",
    /// The service failed (a store that cannot be reached, a handler that failed); nothing
    /// was committed.
    Internal => "internal",
    /// The request's body is over the service's size limit.
    PayloadTooLarge => "payload_too_large",
    /// The request's body is not sent as `Content-Type: application/json`.
    UnsupportedMediaType => "unsupported_media_type",
    /// No route has this path.
    NoRoute => "no_route",
    /// The route does not take this method.
    MethodNotAllowed => "method_not_allowed",
    /// An effect outcome names no effect of this store.
    UnknownEffect => "unknown_effect",
    /// A records route or command names a table the contract does not declare.
    UnknownTable => "unknown_table",
    /// A row written through the records API or `warrant records` does not fit its table (not
    /// an object, a money field that is no exact amount of the contract's currency, a missing
    /// key field); the field names the path at fault. Nothing was written.
    InvalidRecord => "invalid_record",
    /// A consequential act names a row (a record argument, or its resource) that an effect
    /// without effect steps also names, and that effect's outcome has not arrived (`done` or
    /// `failed`; `unknown` keeps holding). Only the executor knows what such an effect changed,
    /// so the act is asked, not committed or held for confirmation, until the outcome comes.
    EffectPending => "effect_pending",
    /// An effect's outcome reported the rows as the system of record left them, and a field the
    /// effect's steps predicted holds another value there; the finding names each such field
    /// with the value predicted and the value reported. The reported rows stand.
    EffectDiverged => "effect_diverged",
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ReasonCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ReasonCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = String::deserialize(deserializer)?;
        ReasonCode::from_code(&code).ok_or_else(|| serde::de::Error::custom(format!("unknown reason code `{code}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case_and_documented() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ReasonCode::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "duplicate code {s}");
            assert!(s.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{s} is not snake_case");
            assert_eq!(ReasonCode::from_code(s), Some(*code));
            assert!(!code.description().is_empty(), "{s} is undocumented");
        }
    }
}
