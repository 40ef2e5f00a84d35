//! Tool calls (§7.8, §7.9): a toolCallId is used once (§11.3), started by
//! a running run that no stop targets (§6.3, §6.4), with a bound client
//! executor when the client executes it (§3.3), and finished exactly once
//! by the run that owns it (§3.5).

use super::{close, Change};
use crate::checker::{fail, RunState, Session, Tool, ToolState, R};
use crate::model::Executor;

impl Session {
    pub(super) fn check_tool_started<'a>(
        &self,
        run_id: &'a str,
        tool_call_id: &'a str,
        executor: Executor,
    ) -> R<Change<'a>> {
        if self.tool_ref(tool_call_id).is_some() {
            return fail(
                "tool_call_duplicate",
                "7.8",
                format!("toolCallId {tool_call_id} was already used"),
            );
        }
        let run = self.open_run(run_id)?;
        if run.state != RunState::Running {
            return fail("run_not_running", "6.4", "no run work while paused");
        }
        if run.stop_requested {
            return fail(
                "run_stop_requested",
                "6.3",
                "no new tool calls after a stop request",
            );
        }
        if executor == Executor::Client && run.client_executor.is_none() {
            return fail(
                "client_executor_missing",
                "3.3",
                "executor=client requires the run's clientExecutorId",
            );
        }
        Ok(Change::ToolStarted {
            run: run_id,
            tool: tool_call_id,
        })
    }

    pub(super) fn start_tool(&mut self, run_id: &str, tool_call_id: &str) {
        if let Some(run) = self.w_mut().runs.get_mut(run_id) {
            run.open_tools.insert(tool_call_id.to_owned());
        }
        self.w_mut().tools.insert(
            tool_call_id.to_owned(),
            Tool {
                run: run_id.into(),
                state: ToolState::Open,
            },
        );
    }

    pub(super) fn check_tool_finished<'a>(
        &self,
        run_id: &'a str,
        tool_call_id: &'a str,
    ) -> R<Change<'a>> {
        let Some(tool) = self.w().tools.get(tool_call_id) else {
            if self.tool_ref(tool_call_id).is_some() {
                return fail(
                    "tool_call_finished_twice",
                    "7.9",
                    "exactly one finish follows each start",
                );
            }
            return fail(
                "tool_call_unknown",
                "7.9",
                format!("tool call {tool_call_id} has not started"),
            );
        };
        if tool.state == ToolState::Finished {
            return fail(
                "tool_call_finished_twice",
                "7.9",
                "exactly one finish follows each start",
            );
        }
        if *tool.run != *run_id {
            return fail(
                "tool_call_run_mismatch",
                "3.5",
                "a tool call is finished by the run that owns it",
            );
        }
        self.open_run(run_id)?;
        Ok(Change::ToolFinished {
            run: run_id,
            tool: tool_call_id,
        })
    }

    pub(super) fn finish_tool(&mut self, run_id: &str, tool_call_id: &str) {
        if let Some(tool) = self.w_mut().tools.get_mut(tool_call_id) {
            tool.state = ToolState::Finished;
        }
        if let Some(run) = self.w_mut().runs.get_mut(run_id) {
            close(&mut run.open_tools, tool_call_id);
        }
    }
}
