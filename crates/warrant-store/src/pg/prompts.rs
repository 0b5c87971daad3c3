//! The prompt registry on PostgreSQL.

use super::PgStore;
use crate::error::StoreError;
use crate::prompts::PromptRegistry;
use crate::prompts::{check_prompt, check_prompt_promotion};
use crate::rows::{PromptPromotionRow, PromptRow};
use crate::storable::storable;

impl PromptRegistry for PgStore {
    fn put_prompt(&mut self, prompt: &PromptRow) -> Result<bool, StoreError> {
        check_prompt(prompt)?;
        let rows = self.query(
            "INSERT INTO prompt_versions (task, version, text) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1",
            &[&prompt.task, &prompt.version, &prompt.text],
        )?;
        Ok(!rows.is_empty())
    }

    fn prompt(&mut self, task: &str, version: &str) -> Result<Option<PromptRow>, StoreError> {
        if !storable(task) || !storable(version) {
            return Ok(None);
        }
        let row =
            self.query_opt("SELECT text FROM prompt_versions WHERE task = $1 AND version = $2", &[&task, &version])?;
        row.map(|row| Ok(PromptRow { task: task.to_owned(), version: version.to_owned(), text: row.try_get(0)? }))
            .transpose()
    }

    fn record_promotion(&mut self, promotion: &PromptPromotionRow) -> Result<i64, StoreError> {
        check_prompt_promotion(promotion)?;
        let row = self.query_opt(
            "INSERT INTO prompt_promotions (task, version, accepted, report) VALUES ($1, $2, $3, $4) RETURNING seq",
            &[&promotion.task, &promotion.version, &promotion.accepted, &promotion.report],
        )?;
        let row = row.ok_or_else(|| StoreError::Corrupt { what: "a promotion insert returned no row".into() })?;
        Ok(row.try_get(0)?)
    }

    fn promotions(&mut self, task: &str) -> Result<Vec<PromptPromotionRow>, StoreError> {
        if !storable(task) {
            return Ok(Vec::new());
        }
        self.query(
            "SELECT seq, version, accepted, report FROM prompt_promotions WHERE task = $1 ORDER BY seq",
            &[&task],
        )?
        .iter()
        .map(|row| {
            Ok(PromptPromotionRow {
                seq: row.try_get(0)?,
                task: task.to_owned(),
                version: row.try_get(1)?,
                accepted: row.try_get(2)?,
                report: row.try_get(3)?,
            })
        })
        .collect()
    }
}
