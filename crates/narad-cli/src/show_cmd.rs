//! `narad show`: what an operator asks about one session, as text or one
//! JSON object. Built from the checker's reduced state (runs, active
//! execution, transcript) and the typed authority events (tool calls,
//! interrupts, terminals, usage).

use std::collections::{BTreeMap, HashMap};

use narad_core::checker::{Checker, RunState, Slot};
use narad_core::model::{AuthorityPayload, Outcome as ToolResult, Usage};
use narad_core::{AuthorityEvent, Parsed, Record, Validator};
use narad_store::{SideSpace, Store, StoredEvent};
use narad_stores::AnyStore;
use serde::Serialize;

use crate::output::{out, plain, text_block, OutputError};
use crate::store_cmds::{journal_pages, Outcome};

/// The longest args summary shown, in characters.
const ARGS_SUMMARY: usize = 60;

/// Everything `show` prints, in the order it prints it.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    session: String,
    events: u64,
    /// The first refusal of the journal by the checker, when any.
    refused: Option<Refusal>,
    /// The active execution in words (`run run-1`, `workflow wf-1`), or none.
    active: Option<String>,
    workflows: Vec<WorkflowLine>,
    runs: Vec<RunLine>,
    tool_calls: Vec<ToolCall>,
    interrupts: Vec<InterruptLine>,
    usage: UsageTotals,
    transcript: Vec<MessageLine>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Refusal {
    session_sequence: u64,
    code: String,
    reason: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkflowLine {
    id: String,
    ended: bool,
    open_interrupt: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RunLine {
    id: String,
    parent: Option<String>,
    depth: usize,
    state: &'static str,
    stop_requested: bool,
    paused_wait: Option<String>,
    executor: Option<String>,
    /// How the run ended: `run.finished`, `run.error` or `run.cancelled`.
    terminal: Option<TerminalLine>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TerminalLine {
    #[serde(rename = "type")]
    ty: &'static str,
    code: Option<String>,
    message: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolCall {
    id: String,
    run: Option<String>,
    name: String,
    /// The args as compact JSON, cut at [`ARGS_SUMMARY`] characters.
    args: String,
    /// `open`, `success`, `error` or `cancelled`.
    outcome: &'static str,
    code: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct InterruptLine {
    id: String,
    run: Option<String>,
    workflow: Option<String>,
    kind: String,
    title: Option<String>,
    /// The decision, or none while open.
    decision: Option<String>,
    expires_at: Option<String>,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct UsageTotals {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
}

#[derive(Debug, Serialize)]
struct MessageLine {
    role: String,
    content: String,
}

fn state_word(s: RunState) -> &'static str {
    match s {
        RunState::Running => "running",
        RunState::Paused => "paused",
        RunState::Finished => "finished",
        RunState::Error => "error",
        RunState::Cancelled => "cancelled",
    }
}

fn active_words(slot: Option<&Slot>) -> Option<String> {
    slot.map(|s| match s {
        Slot::Run(r) => format!("run {r}"),
        Slot::Workflow(w) => format!("workflow {w}"),
    })
}

/// Compact JSON cut at [`ARGS_SUMMARY`] characters, with `…` when cut.
fn summary(v: &serde_json::Value) -> String {
    let full = v.to_string();
    if full.chars().count() <= ARGS_SUMMARY {
        return full;
    }
    let mut cut: String = full.chars().take(ARGS_SUMMARY).collect();
    cut.push('…');
    cut
}

fn add_usage(t: &mut UsageTotals, u: Option<&Usage>) {
    if let Some(u) = u {
        t.prompt_tokens += u.prompt_tokens.unwrap_or(0);
        t.completion_tokens += u.completion_tokens.unwrap_or(0);
        t.total_tokens += u.total_tokens.unwrap_or(0);
    }
}

/// Tool calls, interrupts, terminals and usage, folded from the typed
/// events one at a time (the journal is read a page at a time). A finish
/// or resolution updates the first call or request of its id, found
/// through a map: a scan per finish made a long session quadratic.
#[derive(Default)]
struct Fold {
    tool_calls: Vec<ToolCall>,
    tool_at: HashMap<String, usize>,
    interrupts: Vec<InterruptLine>,
    interrupt_at: HashMap<String, usize>,
    usage: UsageTotals,
    terminals: BTreeMap<String, TerminalLine>,
}

impl Fold {
    fn push(&mut self, v: &Validator, stored: &StoredEvent) {
        let Ok(Parsed::Record {
            record: Record::Authority(ev),
            ..
        }) = v.parse(&stored.bytes)
        else {
            return;
        };
        let AuthorityEvent {
            envelope, payload, ..
        } = ev;
        let run = envelope.run_id.clone();
        match payload {
            AuthorityPayload::ToolCallStarted {
                tool_call_id,
                tool_name,
                args,
                ..
            } => {
                let at = self.tool_calls.len();
                self.tool_at.entry(tool_call_id.clone()).or_insert(at);
                self.tool_calls.push(ToolCall {
                    id: tool_call_id,
                    run,
                    name: tool_name,
                    args: summary(&args),
                    outcome: "open",
                    code: None,
                });
            }
            AuthorityPayload::ToolCallFinished {
                tool_call_id,
                outcome,
                code,
                ..
            } => {
                let at = self.tool_at.get(&tool_call_id).copied();
                if let Some(t) = at.and_then(|i| self.tool_calls.get_mut(i)) {
                    t.outcome = match outcome {
                        ToolResult::Success => "success",
                        ToolResult::Error => "error",
                        ToolResult::Cancelled => "cancelled",
                    };
                    t.code = code;
                }
            }
            AuthorityPayload::InterruptRequested {
                interrupt_id,
                kind,
                title,
                expires_at,
                ..
            } => {
                let at = self.interrupts.len();
                self.interrupt_at.entry(interrupt_id.clone()).or_insert(at);
                self.interrupts.push(InterruptLine {
                    id: interrupt_id,
                    run,
                    workflow: envelope.workflow_id.clone(),
                    kind,
                    title,
                    decision: None,
                    expires_at,
                });
            }
            AuthorityPayload::InterruptResolved {
                interrupt_id,
                decision,
                ..
            } => {
                let at = self.interrupt_at.get(&interrupt_id).copied();
                if let Some(i) = at.and_then(|i| self.interrupts.get_mut(i)) {
                    i.decision = Some(decision);
                }
            }
            AuthorityPayload::RunFinished { usage, .. } => {
                add_usage(&mut self.usage, usage.as_ref());
                if let Some(r) = run {
                    self.terminals
                        .insert(r, terminal("run.finished", None, None));
                }
            }
            AuthorityPayload::RunError {
                code,
                message,
                usage,
            } => {
                add_usage(&mut self.usage, usage.as_ref());
                if let Some(r) = run {
                    self.terminals
                        .insert(r, terminal("run.error", Some(code), Some(message)));
                }
            }
            AuthorityPayload::RunCancelled {
                code,
                message,
                usage,
            } => {
                add_usage(&mut self.usage, usage.as_ref());
                if let Some(r) = run {
                    self.terminals
                        .insert(r, terminal("run.cancelled", code, message));
                }
            }
            _ => {}
        }
    }
}

fn terminal(ty: &'static str, code: Option<String>, message: Option<String>) -> TerminalLine {
    TerminalLine { ty, code, message }
}

/// The run tree depth-first, children in id order. The runs are listed
/// once and grouped by parent; the walk keeps its own stack, so neither a
/// wide tree (a scan of every run per run) nor a deep one (a recursion
/// per level) costs more than the runs.
fn runs(c: &Checker, sid: &str, mut terminals: BTreeMap<String, TerminalLine>) -> Vec<RunLine> {
    let mut children: HashMap<Option<String>, Vec<RunLine>> = HashMap::new();
    for (id, run) in c.runs(sid) {
        children
            .entry(run.parent.clone())
            .or_default()
            .push(RunLine {
                id: id.to_string(),
                parent: run.parent.clone(),
                depth: 0,
                state: state_word(run.state),
                stop_requested: run.stop_requested,
                paused_wait: run.open_pause.clone(),
                executor: run.client_executor.clone(),
                terminal: None,
            });
    }
    // Each level in reverse id order, so the stack pops the smallest first.
    let mut level = |parent: Option<String>, depth: usize| {
        let mut v = children.remove(&parent).unwrap_or_default();
        v.sort_by(|a, b| b.id.cmp(&a.id));
        v.into_iter().map(move |line| (depth, line))
    };
    let mut stack: Vec<(usize, RunLine)> = level(None, 0).collect();
    let mut out = Vec::new();
    while let Some((depth, mut line)) = stack.pop() {
        line.depth = depth;
        line.terminal = terminals.remove(line.id.as_str());
        stack.extend(level(Some(line.id.clone()), depth + 1));
        out.push(line);
    }
    out
}

fn print(r: &Report) -> Result<(), OutputError> {
    out!("session {}: {} events", plain(&r.session), r.events);
    if let Some(f) = &r.refused {
        out!(
            "  journal refused at {}: {}",
            f.session_sequence,
            plain(&f.reason)
        );
    }
    out!(
        "active execution: {}",
        plain(r.active.as_deref().unwrap_or("none"))
    );
    for w in &r.workflows {
        let open = w
            .open_interrupt
            .as_ref()
            .map(|i| format!(" open interrupt {}", plain(i)))
            .unwrap_or_default();
        out!(
            "workflow {} [{}]{open}",
            plain(&w.id),
            if w.ended { "ended" } else { "open" }
        );
    }
    for run in &r.runs {
        let pad = "  ".repeat(run.depth);
        let mut line = format!("{pad}run {} [{}]", plain(&run.id), run.state);
        if run.stop_requested {
            line.push_str(" stop-requested");
        }
        if let Some(w) = &run.paused_wait {
            line.push_str(&format!(" paused(wait {})", plain(w)));
        }
        if let Some(e) = &run.executor {
            line.push_str(&format!(" executor={}", plain(e)));
        }
        out!("{line}");
        for t in r
            .tool_calls
            .iter()
            .filter(|t| t.run.as_ref() == Some(&run.id))
        {
            let code = t
                .code
                .as_ref()
                .map(|c| format!(" ({})", plain(c)))
                .unwrap_or_default();
            out!(
                "{pad}  tool call {} {} {} -> {}{code}",
                plain(&t.id),
                plain(&t.name),
                t.args,
                plain(t.outcome)
            );
        }
        for i in r
            .interrupts
            .iter()
            .filter(|i| i.run.as_ref() == Some(&run.id))
        {
            print_interrupt(&pad, i)?;
        }
        if let Some(t) = &run.terminal {
            let code = t
                .code
                .as_deref()
                .map(|c| format!(" code={}", plain(c)))
                .unwrap_or_default();
            let msg = t
                .message
                .as_deref()
                .map(|m| format!(" message={m:?}"))
                .unwrap_or_default();
            out!("{pad}  ended: {}{code}{msg}", t.ty);
        }
    }
    for i in r.interrupts.iter().filter(|i| i.run.is_none()) {
        print_interrupt("", i)?;
    }
    let u = &r.usage;
    out!(
        "usage: {} prompt, {} completion, {} total tokens",
        u.prompt_tokens,
        u.completion_tokens,
        u.total_tokens
    );
    if !r.transcript.is_empty() {
        out!("transcript:");
    }
    for m in &r.transcript {
        out!("  {}: {}", plain(&m.role), text_block(&m.content, "    "));
    }
    Ok(())
}

fn print_interrupt(pad: &str, i: &InterruptLine) -> Result<(), OutputError> {
    let title = i
        .title
        .as_deref()
        .map(|t| format!(" {t:?}"))
        .unwrap_or_default();
    let expiry = i
        .expires_at
        .as_deref()
        .map(|e| format!(" expires {}", plain(e)))
        .unwrap_or_default();
    let scope = i
        .workflow
        .as_deref()
        .filter(|_| i.run.is_none())
        .map(|w| format!(" (workflow {})", plain(w)))
        .unwrap_or_default();
    out!(
        "{pad}  interrupt {} {}{title}{scope} decision={}{expiry}",
        plain(&i.id),
        plain(&i.kind),
        plain(i.decision.as_deref().unwrap_or("open"))
    );
    Ok(())
}

/// `narad show`
pub async fn show(store: &AnyStore, sid: &str, json: bool) -> Outcome {
    let mut c = Checker::default();
    let mut report = Report {
        session: sid.to_owned(),
        ..Report::default()
    };
    let (v, mut fold) = (Validator::default(), Fold::default());
    let mut pages = journal_pages(store, sid, 0);
    while let Some(page) = pages.next().await.map_err(|e| e.to_string())? {
        for ev in &page {
            report.events += 1;
            if report.refused.is_none() {
                if let Err(r) = c.push_bytes(&ev.bytes) {
                    report.refused = Some(Refusal {
                        session_sequence: ev.position.session_sequence,
                        code: r.code.to_owned(),
                        reason: r.to_string(),
                    });
                }
            }
            fold.push(&v, ev);
        }
    }
    if report.events == 0
        && store
            .side(SideSpace::Session, sid)
            .await
            .map_err(|e| e.to_string())?
            .is_none()
    {
        return Err(format!("no session `{sid}` in this store").into());
    }
    report.active = active_words(c.slot(sid));
    report.workflows = c
        .workflows(sid)
        .map(|(id, w)| WorkflowLine {
            id: id.to_string(),
            ended: w.terminal,
            open_interrupt: w.open_interrupt.as_ref().map(|i| i.id.clone()),
        })
        .collect();
    report.runs = runs(&c, sid, fold.terminals);
    (report.tool_calls, report.interrupts, report.usage) =
        (fold.tool_calls, fold.interrupts, fold.usage);
    if let Some(t) = c.transcript(sid) {
        report.transcript = t
            .messages
            .iter()
            .map(|m| MessageLine {
                role: m.role.to_string(),
                content: match &m.redacted {
                    None => m.content.clone(),
                    Some(Some(r)) => format!("{r} (redacted)"),
                    Some(None) => "(redacted)".into(),
                },
            })
            .collect();
    }
    if json {
        let line = serde_json::to_string(&report).map_err(|e| e.to_string())?;
        out!("{line}");
    } else {
        print(&report)?;
    }
    Ok(if report.refused.is_none() { 0 } else { 1 })
}
