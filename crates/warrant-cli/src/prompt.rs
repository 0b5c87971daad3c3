//! `warrant prompt`: the prompt registry of the model tasks. A version is kept by content hash
//! (`add`); it becomes active only through `promote`, which replays the task's recorded corpus
//! with the candidate against a cassette (no network), refuses if any case does not get its
//! verdict, naming the cases, and records the decision either way.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Subcommand};
use serde_json::json;

use warrant_core::ladder::{AuditSummary, Bars, CorpusRun, Ladder, Subject};
use warrant_core::pointer::UAX29;
use warrant_engine::{StoreUrl, active_prompt, prompt_subject};
use warrant_model::corpus::{self, Case, CaseResult};
use warrant_model::openai::{EndpointConfig, OpenAiProvider};
use warrant_model::{BudgetLimits, PromptVersion, Prompts, RecordedProvider, Recorder, Runner, TurnBudget};
use warrant_store::{PromotionRow, PromptPromotionRow, PromptRow, Store};

use crate::Exit;

#[derive(Debug, Subcommand)]
pub(crate) enum PromptCommand {
    /// Keeps a prompt file as a version of a task; prints the version (its content hash).
    Add {
        #[command(flatten)]
        at: At,
        /// The task (`value_stated`, `locate`, `uncovered_request`, `claims_coverage`, `rewrite`,
        /// `value_classified`).
        task: String,
        /// The prompt file.
        file: PathBuf,
    },
    /// Prints a task's built-in version, its active version and every promotion decided.
    List {
        #[command(flatten)]
        at: At,
        /// The task.
        task: String,
    },
    /// Replays the task's recorded corpus with a kept version; makes it active only if every
    /// case gets its verdict, else refuses (exit 1) and names the cases.
    Promote(PromoteArgs),
    /// Runs the task's corpus with a kept version against the live endpoint the environment
    /// names (`WARRANT_MODEL_BASE_URL`), appending every exchange to a cassette for `promote`.
    Record(RecordArgs),
}

#[derive(Debug, Args)]
pub(crate) struct RecordArgs {
    #[command(flatten)]
    at: At,
    /// The corpus: JSON lines `{"name","input","expect"}`.
    #[arg(long)]
    cases: PathBuf,
    /// The cassette to append to.
    #[arg(long)]
    cassette: PathBuf,
    /// The task.
    task: String,
    /// The kept version to record.
    version: String,
}

#[derive(Debug, Args)]
pub(crate) struct At {
    /// The store: `sqlite:PATH` or `postgres://…[?schema=NAME]`.
    #[arg(long)]
    pub(crate) store: String,
}

#[derive(Debug, Args)]
pub(crate) struct PromoteArgs {
    #[command(flatten)]
    at: At,
    /// The corpus: JSON lines `{"name","input","expect"}`.
    #[arg(long)]
    cases: PathBuf,
    /// The recorded answers (JSON lines, keyed by request hash).
    #[arg(long)]
    cassette: PathBuf,
    /// The model name the recordings were made with.
    #[arg(long, default_value = "default")]
    model: String,
    /// The task.
    task: String,
    /// The version to promote.
    version: String,
    /// Who promotes it (recorded with the promotion).
    #[arg(long, default_value = "operator")]
    who: String,
}

pub(crate) fn open(at: &At) -> Result<Box<dyn Store>, Exit> {
    crate::signals::hold()?;
    let url = StoreUrl::parse(&at.store).map_err(|e| Exit::Input(e.to_string()))?;
    let mut store: Box<dyn Store> = Box::new(url.open().map_err(|e| Exit::Input(e.to_string()))?);
    store.migrate().map_err(|e| Exit::Input(format!("store: {e}")))?;
    Ok(store)
}

fn store_error(e: warrant_store::StoreError) -> Exit {
    Exit::Input(format!("store: {e}"))
}

pub(crate) fn run(command: &PromptCommand) -> Result<(), Exit> {
    match command {
        PromptCommand::Add { at, task, file } => {
            let schema = corpus::schema(task).map_err(|e| Exit::Input(e.to_string()))?;
            let text = std::fs::read_to_string(file)
                .map_err(|e| Exit::Input(format!("cannot read `{}`: {e}", file.display())))?;
            let prompt = PromptVersion::new(task, &text, &schema);
            let mut store = open(at)?;
            store
                .put_prompt(&PromptRow { task: task.clone(), version: prompt.version.clone(), text })
                .map_err(store_error)?;
            println!("{}", prompt.version);
            Ok(())
        }
        PromptCommand::List { at, task } => {
            let builtin = builtin(task)?;
            let mut store = open(at)?;
            let active = active_prompt(store.as_mut(), task).map_err(|e| Exit::Input(e.to_string()))?;
            println!(
                "{}",
                json!({"task": task, "builtin": builtin.version, "active": active.unwrap_or(builtin.version)})
            );
            for p in store.promotions(task).map_err(store_error)? {
                println!("{}", json!({"seq": p.seq, "version": p.version, "accepted": p.accepted, "report": p.report}));
            }
            Ok(())
        }
        PromptCommand::Promote(args) => promote(args),
        PromptCommand::Record(args) => record(args),
    }
}

fn read_cases(path: &std::path::Path) -> Result<Vec<Case>, Exit> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Exit::Input(format!("cannot read `{}`: {e}", path.display())))?;
    let mut cases = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let case: Case =
            serde_json::from_str(line).map_err(|e| Exit::Input(format!("`{}` line {}: {e}", path.display(), i + 1)))?;
        cases.push(case);
    }
    if cases.is_empty() {
        return Err(Exit::Input(format!("`{}` has no case", path.display())));
    }
    Ok(cases)
}

fn kept(store: &mut dyn Store, task: &str, version: &str) -> Result<Prompts, Exit> {
    let kept = store.prompt(task, version).map_err(store_error)?.ok_or_else(|| {
        Exit::Input(format!("version `{version}` of `{task}` is not kept: `warrant prompt add` it first"))
    })?;
    let mut prompts = Prompts::default();
    prompts.set(PromptVersion { task: kept.task, version: kept.version, text: kept.text });
    Ok(prompts)
}

fn record(args: &RecordArgs) -> Result<(), Exit> {
    corpus::schema(&args.task).map_err(|e| Exit::Input(e.to_string()))?;
    let cases = read_cases(&args.cases)?;
    let config = EndpointConfig::from_env().ok_or_else(|| {
        Exit::Input(format!("`{}` is unset: recording needs a live endpoint", warrant_model::openai::ENV_BASE_URL))
    })?;
    let model = config.model.clone();
    let live = OpenAiProvider::new(config).map_err(|e| Exit::Input(e.to_string()))?;
    let recorder = Recorder::new(live, &args.cassette).map_err(|e| Exit::Input(e.to_string()))?;
    let mut store = open(&args.at)?;
    let prompts = kept(store.as_mut(), &args.task, &args.version)?;
    for case in &cases {
        let budget = TurnBudget::new(BudgetLimits::default(), Instant::now());
        let runner = Runner { provider: &recorder, model: &model, budget: &budget, prompts: &prompts };
        let result = corpus::run_case(&runner, &args.task, case, UAX29).map_err(|e| Exit::Input(e.to_string()))?;
        println!(
            "{}",
            json!({"case": result.name, "expect": result.expect, "got": result.got.as_ref().map_err(String::as_str), "passed": result.passed()})
        );
    }
    Ok(())
}

fn builtin(task: &str) -> Result<PromptVersion, Exit> {
    use warrant_core::check::ModelTask;
    use warrant_model::tasks::*;
    Ok(match ModelTask::from_name(task) {
        Some(ModelTask::ValueStated) => PromptVersion::builtin::<ValueStated>(),
        Some(ModelTask::Locate) => PromptVersion::builtin::<Locate>(),
        Some(ModelTask::UncoveredRequest) => PromptVersion::builtin::<UncoveredRequest>(),
        Some(ModelTask::ClaimsCoverage) => PromptVersion::builtin::<ClaimsCoverage>(),
        Some(ModelTask::Rewrite) => PromptVersion::builtin::<Rewrite>(),
        Some(ModelTask::ValueClassified) => PromptVersion::builtin::<ValueClassified>(),
        None => return Err(Exit::Input(format!("no task is named `{task}`"))),
    })
}

fn promote(args: &PromoteArgs) -> Result<(), Exit> {
    // Validate what was written before any IO on the store.
    corpus::schema(&args.task).map_err(|e| Exit::Input(e.to_string()))?;
    let cases = read_cases(&args.cases)?;
    let provider = RecordedProvider::load(&args.cassette).map_err(|e| Exit::Input(e.to_string()))?;
    let mut store = open(&args.at)?;
    let prompts = kept(store.as_mut(), &args.task, &args.version)?;
    let mut results: Vec<CaseResult> = Vec::new();
    for case in &cases {
        // Each case has a budget of its own, as a turn would.
        let budget = TurnBudget::new(BudgetLimits::default(), Instant::now());
        let runner = Runner { provider: &provider, model: &args.model, budget: &budget, prompts: &prompts };
        results.push(corpus::run_case(&runner, &args.task, case, UAX29).map_err(|e| Exit::Input(e.to_string()))?);
    }
    let regressions: Vec<&CaseResult> = results.iter().filter(|r| !r.passed()).collect();
    let accepted = regressions.is_empty();
    let report = json!({
        "cases": results.len(),
        "corpus": args.cases.display().to_string(),
        "cassette": args.cassette.display().to_string(),
        "regressions": regressions,
    });
    let previous = active_prompt(store.as_mut(), &args.task).map_err(|e| Exit::Input(e.to_string()))?;
    // The decision goes through the ladder, the one mechanism that also promotes guards: the bar
    // of a prompt version is its recorded corpus with no case regressing.
    let corpus = CorpusRun::of_recorded_cases(results.iter().map(|r| (r.expect, r.got.as_ref().ok().copied())));
    let at = jiff::Timestamp::now().to_string();
    let subject = Subject { name: prompt_subject(&args.task), version: args.version.clone() };
    let ladder =
        Ladder::promote(subject, AuditSummary::of([]), corpus, Bars::corpus_only(), args.who.clone(), at.clone());
    let accepted = accepted && ladder.is_ok();
    if let Ok(promotion) = &ladder {
        let record = serde_json::to_value(promotion.record()).map_err(|e| Exit::Input(e.to_string()))?;
        store
            .promote(&PromotionRow {
                seq: 0,
                subject: prompt_subject(&args.task),
                version: args.version.clone(),
                record,
                promoted_by: args.who.clone(),
                promoted_at: at,
                demoted: None,
            })
            .map_err(store_error)?;
    }
    store
        .record_promotion(&PromptPromotionRow {
            seq: 0,
            task: args.task.clone(),
            version: args.version.clone(),
            accepted,
            report: report.clone(),
        })
        .map_err(store_error)?;
    for r in &regressions {
        let got = match &r.got {
            Ok(v) => format!("{v:?}").to_lowercase(),
            Err(e) => e.clone(),
        };
        println!("regression: case `{}` expects {} and got {got}", r.name, format!("{:?}", r.expect).to_lowercase());
    }
    println!(
        "{}",
        json!({"task": args.task, "version": args.version, "previous": previous, "accepted": accepted, "cases": results.len(), "regressions": regressions.len()})
    );
    if accepted { Ok(()) } else { Err(Exit::Failed) }
}
