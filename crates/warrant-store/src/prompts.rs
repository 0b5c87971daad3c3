//! The prompt registry: every prompt version a model task ran with, kept by content hash, and
//! the log of promotion decisions about them. Which version is active is the ladder's
//! promotion of subject `prompt:TASK` ([`crate::LadderStore::promotion`]).

use crate::error::StoreError;
use crate::rows::{PromptPromotionRow, PromptRow};
use crate::storable;

/// The prompt registry of a store.
pub trait PromptRegistry: Send {
    /// Keeps a prompt version unless one of that task and version is kept already; whether it
    /// was new. A version is a content hash, so the kept text is the same text.
    fn put_prompt(&mut self, prompt: &PromptRow) -> Result<bool, StoreError>;

    /// A kept prompt version.
    fn prompt(&mut self, task: &str, version: &str) -> Result<Option<PromptRow>, StoreError>;

    /// Records a promotion decision (accepted or refused) of a kept version; its sequence
    /// number.
    fn record_promotion(&mut self, promotion: &PromptPromotionRow) -> Result<i64, StoreError>;

    /// Every promotion decided for `task`, in decision order: the log of decisions. Which
    /// version is active is the ladder's promotion of subject `prompt:TASK` (`promotion`).
    fn promotions(&mut self, task: &str) -> Result<Vec<PromptPromotionRow>, StoreError>;
}

pub(crate) fn check_prompt(prompt: &PromptRow) -> Result<(), StoreError> {
    storable::text(|| "`task`".to_owned(), &prompt.task)?;
    storable::text(|| "`version`".to_owned(), &prompt.version)?;
    storable::text(|| "`text`".to_owned(), &prompt.text)
}

pub(crate) fn check_prompt_promotion(promotion: &PromptPromotionRow) -> Result<(), StoreError> {
    storable::text(|| "`task`".to_owned(), &promotion.task)?;
    storable::text(|| "`version`".to_owned(), &promotion.version)?;
    storable::json(|| "`report`".to_owned(), &promotion.report)
}
