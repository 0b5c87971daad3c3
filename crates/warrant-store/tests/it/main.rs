//! The store's conformance suite: every test is written once, over `&Fixture`, and runs against
//! SQLite and PostgreSQL alike (`sqlite::…` and `postgres::…`). PostgreSQL comes from
//! `WARRANT_TEST_POSTGRES` (default: `host=127.0.0.1 port=5432 user=postgres dbname=test`);
//! when it cannot be reached, the postgres tests fail, they are never skipped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod at_rest;
mod backup;
mod build;
mod commit_order;
mod concurrency;
mod conformance;
mod effect_rows;
mod fixture;
mod group;
mod guards;
mod history;
mod maintenance;
mod outbox;
mod reads;
mod records;
mod registry;
mod roundtrip;
mod schema;

/// Generates one test per backend for each generic test function `module::name(&Fixture)`.
macro_rules! conformance {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $name() {
                    crate::$module::$name(&crate::fixture::Fixture::sqlite());
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                fn $name() {
                    crate::$module::$name(&crate::fixture::Fixture::postgres());
                }
            )*
        }
    };
}

conformance! {
    conformance::migrating_twice_is_a_no_op,
    conformance::prompt_versions_are_kept_and_every_promotion_decision_is_logged,
    conformance::first_migrations_racing_from_two_connections_both_succeed,
    conformance::seeded_records_read_back_at_revision_one,
    conformance::seeding_twice_inserts_nothing_new,
    conformance::a_commit_stores_everything_of_the_turn,
    conformance::the_first_step_that_ends_a_commit_decides_it,
    conformance::a_stale_revision_rolls_back_the_whole_commit,
    conformance::a_write_to_a_missing_record_is_stale_with_no_actual_revision,
    conformance::a_duplicate_turn_returns_the_first_and_writes_nothing,
    conformance::a_retried_turn_is_a_duplicate_not_a_stale_revision,
    conformance::a_duplicate_idempotency_key_rolls_back_the_commit,
    conformance::a_commit_repeating_an_idempotency_key_rolls_back,
    conformance::an_interaction_is_answered_once,
    conformance::an_interaction_opened_and_answered_in_one_commit,
    conformance::answering_an_unknown_interaction_is_closed,
    conformance::an_outcome_is_recorded_once,
    conformance::an_outcome_s_rows_replace_the_stored_ones_and_its_report_is_kept,
    conformance::an_unknown_outcome_is_settled_once_by_done_or_failed,
    conformance::an_effect_holds_its_rows_until_its_outcome_is_done_or_failed,
    conformance::a_turn_s_lookup_answers_the_facts_read_ahead_as_each_read_alone_does,
    conformance::a_stale_outcome_report_records_nothing,
    conformance::an_outcome_for_an_unknown_effect_records_nothing,
    conformance::turns_come_in_commit_order_after_a_sequence_number,
    conformance::events_come_in_commit_order_of_every_or_one_conversation,
    conformance::refused_input_writes_nothing,
    conformance::a_taken_id_is_an_error_and_writes_nothing,
    conformance::an_event_naming_an_unknown_effect_is_an_error_and_writes_nothing,
    conformance::recent_turns_come_newest_first_before_a_cursor,
    guards::a_commit_stores_its_findings_with_the_turn,
    history::a_row_s_events_are_those_of_the_effects_that_changed_or_hold_it,
    guards::a_rolled_back_commit_stores_no_findings,
    guards::a_finding_is_audited_once_with_a_label_that_fits_its_kind,
    guards::sampling_the_same_reply_twice_adds_it_once,
    guards::a_promotion_supersedes_the_active_one_and_a_demotion_leaves_none,
    guards::ladder_input_with_nul_is_refused,
    roundtrip::json_reads_back_as_written,
    roundtrip::a_large_float_and_key_order_read_back_as_written,
    roundtrip::nul_is_refused_and_never_found,
    concurrency::two_writers_of_one_record_one_commits_one_is_stale,
    concurrency::two_commits_of_one_turn_one_commits_one_is_a_duplicate,
    concurrency::two_answers_to_one_interaction_one_is_closed,
    concurrency::two_reports_of_one_effect_one_is_recorded,
    concurrency::two_writers_of_two_records_in_opposite_orders_do_not_deadlock,
    concurrency::a_reader_tailing_turns_misses_none_while_writers_commit,
    outbox::a_duplicate_enqueue_is_one_row,
    outbox::taking_leases_due_messages_in_stored_order,
    outbox::an_expired_lease_is_taken_again,
    outbox::failures_back_off_and_the_last_attempt_is_dead,
    outbox::a_permanent_refusal_is_dead_at_once,
    outbox::two_takers_never_get_the_same_row,
    outbox::due_jobs_are_taken_when_due_once_and_completed_by_their_holder,
    outbox::two_schedulers_never_take_the_same_job,
    outbox::delivery_input_with_nul_is_refused,
    records::a_put_without_a_precondition_creates_then_replaces,
    records::if_none_match_only_creates,
    records::if_match_only_updates_that_revision,
    records::a_put_makes_a_commit_decided_against_the_old_row_stale,
    records::a_delete_needs_the_revision_and_a_deleted_row_is_gone,
    records::an_import_creates_or_replaces_every_row_and_answers_each_revision,
    records::a_refused_import_writes_no_row,
    records::an_import_failing_at_one_row_rolls_back_the_rows_before_it,
    records::a_row_that_is_no_object_or_has_no_key_is_refused,
    records::a_file_compared_with_the_store_names_the_rows_that_differ,
    records::a_seed_mark_is_kept_per_table_and_replaced,
    records::two_creates_of_one_row_one_creates_one_finds_it,
    records::two_unconditional_puts_of_a_new_row_both_write,
    records::a_put_and_a_commit_of_one_revision_one_wins,
    effect_rows::a_created_row_is_inserted_and_a_second_create_of_it_is_stale,
    effect_rows::a_deleted_row_is_gone_at_the_revision_read_and_may_be_created_again,
    reads::a_read_row_changed_since_the_decision_makes_the_commit_stale,
    reads::a_read_row_deleted_since_is_stale_with_no_actual_revision,
    reads::a_row_read_missing_and_created_since_is_stale,
    reads::a_row_both_read_and_written_is_checked_by_its_write,
    reads::a_commit_reading_a_row_and_a_writer_of_it_are_serialized,
    reads::reads_of_several_rows_and_a_writer_of_them_never_deadlock,
    reads::a_row_read_shared_is_the_row_as_stored_after_every_write,
    reads::a_row_read_again_from_the_same_text_is_served_the_value_already_read,
    reads::reads_in_a_span_read_the_rows_and_leave_the_store_writable,
    maintenance::a_migrated_store_has_run_every_step_this_build_knows,
    maintenance::a_sound_store_s_integrity_finds_nothing,
    maintenance::every_effect_is_settled_or_listed_as_pending,
    maintenance::an_export_writes_every_row_once_kind_by_kind_with_its_json_as_stored,
    maintenance::an_export_whose_output_fails_stops_there_and_leaves_the_store_usable,
    maintenance::a_store_built_at_an_older_step_migrates_in_place_with_its_data_intact,
    maintenance::a_store_migrated_by_a_newer_build_is_refused_and_named,
}
