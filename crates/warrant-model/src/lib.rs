//! Model providers and the small model tasks that can only take away (docs/design.md §6, rule 4).
//! Only this crate talks to a model endpoint. A task's answer is parsed by code against its
//! schema and read into a verdict with no variant that authorizes: pass, block, repair, ask;
//! a budget that runs out or a provider that fails makes the check fail, never pass.

#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

pub mod budget;
pub mod checks;
pub mod corpus;
pub mod openai;
pub mod provider;
pub mod recorded;
pub mod task;
pub mod tasks;

pub use budget::{BudgetLimits, TaskLimits, TurnBudget};
pub use checks::{CheckRound, TaskTiming, run_checks};
pub use openai::{EndpointConfig, OpenAiProvider};
pub use provider::{ChatAnswer, ChatRequest, Message, Provider, ProviderError};
pub use recorded::{Exchange, RecordedProvider, Recorder};
pub use task::{ModelCall, Outcome, PromptVersion, Prompts, Round, Runner, Task, TaskRun};
