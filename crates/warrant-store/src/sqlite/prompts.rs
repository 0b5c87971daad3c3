//! The prompt registry on SQLite.

use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, json};
use crate::error::StoreError;
use crate::prompts::PromptRegistry;
use crate::prompts::{check_prompt, check_prompt_promotion};
use crate::rows::{PromptPromotionRow, PromptRow};
use crate::storable::storable;

impl PromptRegistry for SqliteStore {
    fn put_prompt(&mut self, prompt: &PromptRow) -> Result<bool, StoreError> {
        check_prompt(prompt)?;
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT INTO prompt_versions (task, version, text) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
            )?
            .execute(params![prompt.task, prompt.version, prompt.text])?;
        Ok(inserted == 1)
    }

    fn prompt(&mut self, task: &str, version: &str) -> Result<Option<PromptRow>, StoreError> {
        if !storable(task) || !storable(version) {
            return Ok(None);
        }
        Ok(self
            .conn
            .prepare_cached("SELECT text FROM prompt_versions WHERE task = ?1 AND version = ?2")?
            .query_row(params![task, version], |row| row.get(0))
            .optional()?
            .map(|text| PromptRow { task: task.to_owned(), version: version.to_owned(), text }))
    }

    fn record_promotion(&mut self, promotion: &PromptPromotionRow) -> Result<i64, StoreError> {
        check_prompt_promotion(promotion)?;
        let report = promotion.report.to_string();
        let seq = self
            .conn
            .prepare_cached(
                "INSERT INTO prompt_promotions (task, version, accepted, report) VALUES (?1, ?2, ?3, ?4) RETURNING seq",
            )?
            .query_row(params![promotion.task, promotion.version, promotion.accepted, report], |row| row.get(0))?;
        Ok(seq)
    }

    fn promotions(&mut self, task: &str) -> Result<Vec<PromptPromotionRow>, StoreError> {
        if !storable(task) {
            return Ok(Vec::new());
        }
        let raw: Vec<(i64, String, bool, String)> = self
            .conn
            .prepare_cached(
                "SELECT seq, version, accepted, report FROM prompt_promotions WHERE task = ?1 ORDER BY seq",
            )?
            .query_map(params![task], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))?
            .collect::<Result<_, _>>()?;
        raw.into_iter()
            .map(|(seq, version, accepted, report)| {
                Ok(PromptPromotionRow {
                    seq,
                    task: task.to_owned(),
                    version,
                    accepted,
                    report: json(&report, || format!("the report of promotion {seq}"))?,
                })
            })
            .collect()
    }
}
