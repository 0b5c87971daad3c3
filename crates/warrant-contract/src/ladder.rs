//! The ladder (rule 2): how a capability earns authority. Whatever is promoted (a guard version
//! now, a prompt version later) runs advisory until people have audited its record; it is
//! promoted only when the record clears the bars, and a promotion names the exact version it was
//! earned by, so any change to the promoted thing sends it back to advisory.
//!
//! The only way to hold a [`Promotion`] is to have the bars checked: [`Ladder::promote`] checks
//! them on fresh evidence, [`Promotion::admit`] checks them again on a stored record. Code that
//! needs authority (the guard's enforcing branch) takes a `&Promotion`, so the compiler keeps it
//! out of reach of everything that has not climbed.
//!
//! The evidence is counted, never stated: a [`CorpusRun`] comes from running a corpus (the
//! guard's adversarial corpus, run by warrant-core's `guard_corpus`; a prompt's recorded corpus, counted
//! by [`CorpusRun::of_recorded_cases`] from each case's expected verdict and the one the model
//! gave), and an [`AuditSummary`] from the labels read from the audits ([`AuditSummary::of`]).
//! Neither has public fields, `Default` or `Deserialize`, so no caller writes the numbers down:
//!
//! ```compile_fail
//! use warrant_contract::ladder::CorpusRun;
//! let run = CorpusRun { passed: 138, failed: 0 };
//! ```
//!
//! ```compile_fail
//! use warrant_contract::ladder::CorpusRun;
//! let run: CorpusRun = serde_json::from_str(r#"{"passed":138,"failed":0}"#).unwrap();
//! ```
//!
//! ```compile_fail
//! use warrant_contract::ladder::CorpusRun;
//! let run = CorpusRun::default();
//! ```
//!
//! ```compile_fail
//! use warrant_contract::ladder::AuditSummary;
//! let audits = AuditSummary { audited: 50, false_positives: 0, sampled: 0, misses: 0 };
//! ```
//!
//! ```compile_fail
//! use warrant_contract::ladder::AuditSummary;
//! let audits: AuditSummary = serde_json::from_str(r#"{"audited":50,"false_positives":0,"sampled":0,"misses":0}"#).unwrap();
//! ```
//!
//! A stored [`PromotionRecord`] reads back with the evidence it was promoted on, and is
//! admitted only after [`Promotion::admit`] has checked that evidence against its bars again,
//! for the version in force.

use serde::{Deserialize, Serialize};

use crate::check::CheckVerdict;
use crate::reason::ReasonCode;

/// What is promoted: a kind (`guard:announcement`, later `prompt:<task>`) and the version
/// (a hash of everything that decides its behaviour).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Subject {
    /// The kind of thing and its name.
    pub name: String,
    /// The exact version.
    pub version: String,
}

/// A person's label on an audited item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// A flag that was right.
    TruePositive,
    /// A flag on legitimate speech.
    FalsePositive,
    /// A sampled unflagged item that should have been flagged.
    Miss,
    /// A sampled unflagged item that was rightly left alone.
    Clean,
}

impl Label {
    /// The label as written on the command line and stored.
    pub const fn as_str(self) -> &'static str {
        match self {
            Label::TruePositive => "true_positive",
            Label::FalsePositive => "false_positive",
            Label::Miss => "miss",
            Label::Clean => "clean",
        }
    }

    /// The label written `text`.
    pub fn parse(text: &str) -> Option<Label> {
        [Label::TruePositive, Label::FalsePositive, Label::Miss, Label::Clean].into_iter().find(|l| l.as_str() == text)
    }
}

/// The audited record of one version: how many flags were audited and how many were wrong,
/// how many unflagged samples were audited and how many were misses. Counted from labels by
/// [`AuditSummary::of`], never written down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AuditSummary {
    audited: u64,
    false_positives: u64,
    sampled: u64,
    misses: u64,
}

impl AuditSummary {
    /// Counts `labels`, as read from the audits of one version.
    pub fn of(labels: impl IntoIterator<Item = Label>) -> AuditSummary {
        let mut summary = AuditSummary { audited: 0, false_positives: 0, sampled: 0, misses: 0 };
        for label in labels {
            match label {
                Label::TruePositive => summary.audited += 1,
                Label::FalsePositive => {
                    summary.audited += 1;
                    summary.false_positives += 1;
                }
                Label::Clean => summary.sampled += 1,
                Label::Miss => {
                    summary.sampled += 1;
                    summary.misses += 1;
                }
            }
        }
        summary
    }

    /// Flags audited.
    pub fn audited(&self) -> u64 {
        self.audited
    }

    /// Of those, false positives.
    pub fn false_positives(&self) -> u64 {
        self.false_positives
    }

    /// Unflagged samples audited.
    pub fn sampled(&self) -> u64 {
        self.sampled
    }

    /// Of those, misses.
    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// The observed false-positive rate, or `None` before any audit.
    pub fn false_positive_rate(&self) -> Option<f64> {
        rate(self.false_positives, self.audited)
    }

    /// The exact one-sided 95% Clopper–Pearson upper bound of the false-positive rate.
    pub fn false_positive_upper_bound(&self) -> Option<f64> {
        (self.audited > 0).then(|| clopper_pearson_upper(self.false_positives, self.audited, 0.95))
    }

    /// The observed miss rate among sampled unflagged items.
    pub fn miss_rate(&self) -> Option<f64> {
        rate(self.misses, self.sampled)
    }
}

#[expect(clippy::cast_precision_loss, reason = "counts of audited items are far below 2^52")]
fn rate(k: u64, n: u64) -> Option<f64> {
    (n > 0).then(|| k as f64 / n as f64)
}

/// The bars a record must clear.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bars {
    /// At least this many audited flags.
    pub min_audited: u64,
    /// The observed false-positive rate must be strictly under this.
    pub max_false_positive_rate: f64,
    /// The adversarial corpus may fail at most this many cases.
    pub max_corpus_failures: u64,
    /// Whether audited findings are part of the bar. A guard's are; a prompt version, which
    /// flags nothing, is promoted on its recorded corpus alone.
    #[serde(default = "audits_required")]
    pub audits_required: bool,
}

const fn audits_required() -> bool {
    true
}

impl Bars {
    /// The bar of a prompt version (docs/design.md §6): its recorded corpus, with no case regressing.
    pub const fn corpus_only() -> Bars {
        Bars { min_audited: 0, max_false_positive_rate: 1.0, max_corpus_failures: 0, audits_required: false }
    }
}

impl Default for Bars {
    /// docs/design.md §8: 50 audited findings, under 2% false positives, a passing corpus.
    fn default() -> Bars {
        Bars { min_audited: 50, max_false_positive_rate: 0.02, max_corpus_failures: 0, audits_required: true }
    }
}

/// The result of a fresh run of a corpus: made only by running one (see the module's
/// documentation), never written down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CorpusRun {
    passed: u64,
    failed: u64,
}

impl CorpusRun {
    /// The count of a run that core itself made (the guard's adversarial corpus).
    #[cfg(any(test, feature = "corpus"))]
    pub const fn counted(passed: u64, failed: u64) -> CorpusRun {
        CorpusRun { passed, failed }
    }

    /// Counts a recorded corpus that a prompt version was run on: for each case, the verdict
    /// it must get and the verdict the model gave (`None` when it gave none). A case passes
    /// only when the two are equal.
    pub fn of_recorded_cases(cases: impl IntoIterator<Item = (CheckVerdict, Option<CheckVerdict>)>) -> CorpusRun {
        let (mut passed, mut failed) = (0, 0);
        for (expect, got) in cases {
            if got == Some(expect) {
                passed += 1;
            } else {
                failed += 1;
            }
        }
        CorpusRun { passed, failed }
    }

    /// Cases passed.
    pub fn passed(&self) -> u64 {
        self.passed
    }

    /// Cases failed.
    pub fn failed(&self) -> u64 {
        self.failed
    }
}

/// The evidence of a stored record as it reads back: the same fields, read only into the record
/// (see [`PromotionRecord`]'s `Deserialize`), so that no caller can read evidence out of JSON
/// of its own on its way to [`Ladder::promote`].
#[derive(Deserialize)]
struct StoredAudits {
    audited: u64,
    false_positives: u64,
    sampled: u64,
    misses: u64,
}

#[derive(Deserialize)]
struct StoredCorpus {
    passed: u64,
    failed: u64,
}

#[derive(Deserialize)]
struct StoredRecord {
    subject: Subject,
    audits: StoredAudits,
    corpus: StoredCorpus,
    bars: Bars,
    who: String,
    at: String,
}

impl From<StoredRecord> for PromotionRecord {
    fn from(stored: StoredRecord) -> PromotionRecord {
        let StoredAudits { audited, false_positives, sampled, misses } = stored.audits;
        PromotionRecord {
            subject: stored.subject,
            audits: AuditSummary { audited, false_positives, sampled, misses },
            corpus: CorpusRun { passed: stored.corpus.passed, failed: stored.corpus.failed },
            bars: stored.bars,
            who: stored.who,
            at: stored.at,
        }
    }
}

/// Everything a promotion was decided on; stored with it. Read back from the store, it is only
/// admitted by [`Promotion::admit`], which checks its evidence against its bars again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredRecord")]
pub struct PromotionRecord {
    /// What was promoted, at which version.
    pub subject: Subject,
    /// The audited record.
    pub audits: AuditSummary,
    /// The adversarial run.
    pub corpus: CorpusRun,
    /// The bars it cleared.
    pub bars: Bars,
    /// Who promoted it.
    pub who: String,
    /// When (RFC 3339, from the caller's clock).
    pub at: String,
}

/// Why a promotion is refused or does not hold.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// Too few audited flags.
    #[error("{audited} findings audited, the bar is at least {min}")]
    TooFewAudits {
        /// Findings audited so far.
        audited: u64,
        /// The least the bar accepts.
        min: u64,
    },
    /// The false-positive rate is not under the bar.
    #[error("false-positive rate {rate:.4} ({false_positives} of {audited}) is not under {max}")]
    FalsePositiveRate {
        /// False positives over findings audited.
        rate: f64,
        /// Audited findings judged wrong.
        false_positives: u64,
        /// Findings audited.
        audited: u64,
        /// The bar the rate must be under.
        max: f64,
    },
    /// The adversarial corpus failed, or ran no case at all.
    #[error(
        "the adversarial corpus passed {passed} and failed {failed} cases; it must pass some and fail at most {max}"
    )]
    Corpus {
        /// Cases the version got right.
        passed: u64,
        /// Cases it got wrong.
        failed: u64,
        /// The most failures the bar accepts.
        max: u64,
    },
    /// The record was earned by another version.
    #[error("the promotion is for version `{promoted}`, the current version is `{current}`")]
    VersionMismatch {
        /// The version the promotion was earned by.
        promoted: String,
        /// The version in force now.
        current: String,
    },
}

impl Refusal {
    /// The stable reason code.
    pub const fn code(&self) -> ReasonCode {
        match self {
            Refusal::TooFewAudits { .. } => ReasonCode::PromotionTooFewAudits,
            Refusal::FalsePositiveRate { .. } => ReasonCode::PromotionFalsePositiveRate,
            Refusal::Corpus { .. } => ReasonCode::PromotionCorpusFailed,
            Refusal::VersionMismatch { .. } => ReasonCode::PromotionVersionMismatch,
        }
    }
}

/// Authority earned on the ladder, for one exact version. It has no public constructor: only
/// [`Ladder::promote`] and [`Promotion::admit`] make one, and both check the bars first.
///
/// ```compile_fail
/// use warrant_contract::ladder::{Promotion, PromotionRecord};
/// fn forge(record: PromotionRecord) -> Promotion {
///     Promotion { record }
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Promotion {
    record: PromotionRecord,
}

impl Promotion {
    /// The record it stands on.
    pub fn record(&self) -> &PromotionRecord {
        &self.record
    }

    /// Admits a stored promotion record for `current`, the version in force now: the record must
    /// name that very version and its evidence must still clear its bars.
    pub fn admit(record: &PromotionRecord, current: &Subject) -> Result<Promotion, Refusal> {
        if record.subject != *current {
            return Err(Refusal::VersionMismatch {
                promoted: format!("{}@{}", record.subject.name, record.subject.version),
                current: format!("{}@{}", current.name, current.version),
            });
        }
        check_bars(&record.audits, record.corpus, &record.bars)?;
        Ok(Promotion { record: record.clone() })
    }
}

/// The one mechanism: audit, bars, promotion record, demotion on change.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ladder;

impl Ladder {
    /// Promotes `subject` if its audited record and a fresh adversarial run clear `bars`.
    pub fn promote(
        subject: Subject,
        audits: AuditSummary,
        corpus: CorpusRun,
        bars: Bars,
        who: String,
        at: String,
    ) -> Result<Promotion, Refusal> {
        check_bars(&audits, corpus, &bars)?;
        Ok(Promotion { record: PromotionRecord { subject, audits, corpus, bars, who, at } })
    }
}

fn check_bars(audits: &AuditSummary, corpus: CorpusRun, bars: &Bars) -> Result<(), Refusal> {
    if bars.audits_required {
        check_audits(audits, bars)?;
    }
    if corpus.failed > bars.max_corpus_failures || corpus.passed == 0 {
        return Err(Refusal::Corpus { passed: corpus.passed, failed: corpus.failed, max: bars.max_corpus_failures });
    }
    Ok(())
}

fn check_audits(audits: &AuditSummary, bars: &Bars) -> Result<(), Refusal> {
    if audits.audited < bars.min_audited || audits.audited == 0 {
        return Err(Refusal::TooFewAudits { audited: audits.audited, min: bars.min_audited });
    }
    let rate = audits.false_positive_rate().unwrap_or(1.0);
    if rate.is_nan() || rate >= bars.max_false_positive_rate {
        return Err(Refusal::FalsePositiveRate {
            rate,
            false_positives: audits.false_positives,
            audited: audits.audited,
            max: bars.max_false_positive_rate,
        });
    }
    Ok(())
}

/// The natural log of the binomial probability of `i` successes in `n` trials at `p`, for
/// 0 < p < 1, summed in logs so that large `n` neither overflows nor underflows early.
#[expect(clippy::cast_precision_loss, reason = "counts of audited items are far below 2^52")]
fn ln_pmf(n: u64, i: u64, ln_p: f64, ln_q: f64, ln_choose: f64) -> f64 {
    ln_choose + i as f64 * ln_p + (n - i) as f64 * ln_q
}

/// P(X ≤ k) for X ~ Binomial(n, p).
#[expect(clippy::cast_precision_loss, reason = "counts of audited items are far below 2^52")]
pub fn binomial_cdf(k: u64, n: u64, p: f64) -> f64 {
    if k >= n || p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let (ln_p, ln_q) = (p.ln(), (-p).ln_1p());
    let mut ln_choose = 0.0;
    let mut terms = Vec::with_capacity(usize::try_from(k).unwrap_or(0).saturating_add(1));
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        terms.push(ln_pmf(n, i, ln_p, ln_q, ln_choose));
    }
    // Log-sum-exp: the largest term is factored out so no term underflows before the others.
    let max = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = terms.iter().map(|t| (t - max).exp()).sum();
    (max + sum.ln()).exp().min(1.0)
}

/// The exact one-sided Clopper–Pearson upper bound at `confidence` for `k` events in `n`
/// trials: the `p` at which P(X ≤ k) = 1 − confidence, found by bisection on the binomial CDF
/// (which falls as `p` rises). `k ≥ n` gives 1.
pub fn clopper_pearson_upper(k: u64, n: u64, confidence: f64) -> f64 {
    if n == 0 || k >= n {
        return 1.0;
    }
    let alpha = 1.0 - confidence;
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if binomial_cdf(k, n, mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-15 {
            break;
        }
    }
    hi
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_prompt_version_climbs_the_same_ladder_on_its_corpus_alone() {
        let subject = Subject { name: "prompt:value_stated".into(), version: "abc".into() };
        let ok = Ladder::promote(
            subject.clone(),
            AuditSummary::of([]),
            CorpusRun { passed: 4, failed: 0 },
            Bars::corpus_only(),
            "ops".into(),
            "2026-11-29T22:00:00Z".into(),
        );
        let promotion = ok.unwrap();
        assert!(Promotion::admit(promotion.record(), &subject).is_ok());
        let regressed = Ladder::promote(
            subject.clone(),
            AuditSummary::of([]),
            CorpusRun { passed: 3, failed: 1 },
            Bars::corpus_only(),
            "ops".into(),
            "2026-11-29T22:00:00Z".into(),
        );
        assert_eq!(regressed.unwrap_err().code(), ReasonCode::PromotionCorpusFailed);
        // A guard's bar still needs its audits: the corpus alone does not promote a guard.
        let guard = Ladder::promote(
            Subject { name: "guard:announcement".into(), version: "v".into() },
            AuditSummary::of([]),
            CorpusRun { passed: 138, failed: 0 },
            Bars::default(),
            "ops".into(),
            "2026-11-29T22:00:00Z".into(),
        );
        assert_eq!(guard.unwrap_err().code(), ReasonCode::PromotionTooFewAudits);
    }

    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() < tolerance
    }

    #[test]
    fn clopper_pearson_matches_known_values() {
        // 0 of n has the closed form 1 - alpha^(1/n).
        assert!(close(clopper_pearson_upper(0, 50, 0.95), 1.0 - 0.05_f64.powf(1.0 / 50.0), 1e-12));
        assert!(close(clopper_pearson_upper(0, 50, 0.95), 0.058155, 1e-6));
        // Beta(0.95; k + 1, n - k), computed independently by bisection on exact binomial sums
        // (Python's math.comb): the same as R's binom.test(k, n, alternative = "less").
        assert!(close(clopper_pearson_upper(1, 50, 0.95), 0.091_398_1, 1e-6));
        assert!(close(clopper_pearson_upper(5, 100, 0.95), 0.102_253_4, 1e-6));
        assert!(close(clopper_pearson_upper(0, 1000, 0.95), 0.002991, 1e-6));
        assert_eq!(clopper_pearson_upper(3, 3, 0.95), 1.0);
        assert_eq!(clopper_pearson_upper(0, 0, 0.95), 1.0);
    }

    #[test]
    fn the_cdf_stays_finite_for_large_counts() {
        let p = clopper_pearson_upper(200, 100_000, 0.95);
        assert!(p > 0.002 && p < 0.0024, "{p}");
        assert!(close(binomial_cdf(10, 20, 0.5), 0.588_098_1, 1e-6));
    }

    fn subject(version: &str) -> Subject {
        Subject { name: "guard:announcement".into(), version: version.into() }
    }

    fn promote(audited: u64, fp: u64, failed: u64) -> Result<Promotion, Refusal> {
        let audits = AuditSummary { audited, false_positives: fp, sampled: 0, misses: 0 };
        Ladder::promote(
            subject("v1"),
            audits,
            CorpusRun { passed: 120, failed },
            Bars::default(),
            "ana".into(),
            "2026-11-29T00:00:00Z".into(),
        )
    }

    #[test]
    fn promotion_is_refused_below_the_bars_and_allowed_above_them() {
        assert!(matches!(promote(49, 0, 0), Err(Refusal::TooFewAudits { .. })));
        assert!(matches!(promote(50, 1, 0), Err(Refusal::FalsePositiveRate { .. })));
        assert!(matches!(promote(100, 2, 0), Err(Refusal::FalsePositiveRate { .. })));
        assert!(matches!(promote(50, 0, 1), Err(Refusal::Corpus { .. })));
        let audits = AuditSummary { audited: 50, false_positives: 0, sampled: 0, misses: 0 };
        let empty =
            Ladder::promote(subject("v1"), audits, CorpusRun::counted(0, 0), Bars::default(), "ana".into(), "t".into());
        assert!(matches!(empty, Err(Refusal::Corpus { passed: 0, .. })), "an empty corpus run is no adversarial pass");
        assert!(promote(50, 0, 0).is_ok());
        assert!(promote(101, 2, 0).is_ok());
    }

    #[test]
    fn a_stored_promotion_holds_only_for_its_exact_version() {
        let promotion = promote(60, 0, 0).unwrap();
        assert!(Promotion::admit(promotion.record(), &subject("v1")).is_ok());
        let refused = Promotion::admit(promotion.record(), &subject("v2"));
        assert!(matches!(refused, Err(Refusal::VersionMismatch { .. })));
    }

    #[test]
    fn a_stored_record_below_its_bars_is_not_admitted() {
        let mut record = promote(60, 0, 0).unwrap().record().clone();
        record.audits.false_positives = 10;
        assert!(matches!(Promotion::admit(&record, &subject("v1")), Err(Refusal::FalsePositiveRate { .. })));
    }
}
