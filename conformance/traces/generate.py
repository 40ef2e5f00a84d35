#!/usr/bin/env python3
"""Regenerates the project's golden traces: for each rule, NAME.jsonl (must
be accepted) and NAME.invalid.jsonl (must be rejected at the line and with
the code listed in expected.tsv), and the rule table of ../NOTES.md. Run from
this folder: python3 generate.py"""
import json

class J:
    def __init__(self, session="s-1"):
        self.session, self.n, self.seq, self.wseq, self.lines = session, 0, {}, {}, []
    def ev(self, ty, run=None, root=None, wf=None, **body):
        self.n += 1
        e = {"type": ty, "protocolVersion": "narad/v1", "eventId": f"evt-{self.n}",
             "timestamp": f"2026-08-05T00:{self.n // 60:02d}:{self.n % 60:02d}Z",
             "sessionId": self.session, "sessionSequence": self.n}
        if wf:
            self.wseq[wf] = self.wseq.get(wf, 0) + 1
            e.update(workflowId=wf, workflowSequence=self.wseq[wf])
        if run:
            root = root or run
            self.seq[root] = self.seq.get(root, 0) + 1
            e.update(rootRunId=root, runId=run, sequence=self.seq[root])
        e.update(body)
        self.lines.append(e)
        return e
    def raw(self, e):
        self.lines.append(e)
    def text(self):
        return "".join(json.dumps(l, separators=(",", ":")) + "\n" for l in self.lines)

def interrupt(j, run, actions=("approve", "deny"), i="int-1", w="wait-1", **kw):
    j.ev("interrupt.requested", run, interruptId=i, waitId=w, kind="approval", actions=list(actions), **kw)
    j.ev("run.paused", run, waitId=w, reason="interrupt", resumeMode="command", interruptId=i)

cases = {}  # name -> (valid J, invalid J, line, code, section, rule)
# Each invalid trace ends with the event that breaks its rule: the expected
# line is its last line.

def case(name, section, rule, code, build):
    ok, bad = J(), J()
    build(ok, False)
    build(bad, True)
    cases[name] = (ok, bad, len(bad.lines), code, section, rule)

def dedup(j, bad):
    e = j.ev("run.started", "r")
    j.raw(dict(e))  # identical redelivery is a no-op
    f = dict(e); f["clientExecutorId"] = "other"
    if bad: j.raw(f)
    else: j.ev("run.finished", "r")
case("dedup-conflict", "4.1", "same (sessionId, eventId) with different data is refused; identical redelivery is a no-op", "duplicate_event_conflict", dedup)

def session_gap(j, bad):
    j.ev("run.started", "r")
    if bad: j.n += 1
    j.ev("run.finished", "r")
case("session-sequence-gap", "4.2", "sessionSequence is contiguous", "session_sequence_gap", session_gap)

def run_gap(j, bad):
    j.ev("run.started", "r")
    if bad: j.seq["r"] += 1
    j.ev("run.finished", "r")
case("run-sequence-gap", "4.2", "run-tree sequence is contiguous per rootRunId", "run_sequence_gap", run_gap)

def wf_gap(j, bad):
    j.ev("workflow.started", wf="w")
    if bad: j.wseq["w"] += 1
    j.ev("workflow.finished", wf="w")
case("workflow-sequence-gap", "4.2", "workflowSequence is contiguous per workflowId", "workflow_sequence_gap", wf_gap)

def wf_run_fields(j, bad):
    j.ev("workflow.started", wf="w")
    j.ev("run.started", "a", wf="w")
    j.ev("tool.call.started", "a", wf="w", toolCallId="t1", toolName="search", executor="backend", args={})
    j.ev("tool.call.finished", "a", wf="w", toolCallId="t1", outcome="success", response=None)
    j.ev("run.finished", "a", wf=None if bad else "w")
case("workflow-run-event-without-workflow-fields", "4.2", "every event of a workflow-owned run carries its workflowId and workflowSequence", "run_workflow_mismatch", wf_run_fields)

def twice_started(j, bad):
    j.ev("run.started", "r")
    if bad: j.ev("run.started", "r")
    else: j.ev("run.finished", "r")
case("run-started-twice", "7.1", "run.started occurs exactly once per runId", "run_already_started", twice_started)

def open_tool(j, bad):
    j.ev("run.started", "r")
    j.ev("tool.call.started", "r", toolCallId="t1", toolName="search", executor="backend", args={})
    if not bad: j.ev("tool.call.finished", "r", toolCallId="t1", outcome="success", response=None)
    j.ev("run.finished", "r")
case("terminal-with-open-tool", "6.2", "no terminal while a tool call is open", "open_work", open_tool)

def open_child(j, bad):
    j.ev("run.started", "r")
    j.ev("run.started", "c", root="r", parentRunId="r")
    if not bad: j.ev("run.finished", "c", root="r")
    j.ev("run.finished", "r")
case("terminal-with-open-child", "6.2", "no terminal while a child run is open", "open_work", open_child)

def paused_terminal(j, bad):
    j.ev("run.started", "r")
    j.ev("run.paused", "r", waitId="w1", reason="capacity", resumeMode="automatic")
    if not bad: j.ev("run.resumed", "r", waitId="w1")
    j.ev("run.cancelled", "r")
case("terminal-while-paused", "6.1", "a paused run resumes before any terminal", "run_paused", paused_terminal)

def two_terminals(j, bad):
    j.ev("run.started", "r")
    j.ev("run.error", "r", code="boom", message="It failed.")
    if bad: j.ev("run.finished", "r")
case("second-terminal", "7.5", "one terminal per run", "run_terminated", two_terminals)

def slot(j, bad):
    j.ev("run.started", "r1")
    if not bad: j.ev("run.finished", "r1")
    j.ev("run.started", "r2")
case("second-top-level-run", "3.1", "at most one active top-level execution per session", "session_slot_busy", slot)

def wf_slot(j, bad):
    j.ev("workflow.started", wf="w")
    j.ev("run.started", "a", wf="w")
    if not bad: j.ev("run.finished", "a", wf="w")
    j.ev("run.started", "b", wf="w")
case("second-workflow-top-run", "3.2", "a workflow holds at most one active top-level run", "workflow_slot_busy", wf_slot)

def tool_after_stop(j, bad):
    j.ev("run.started", "r")
    j.ev("run.stop.requested", "r", targetRunId="r")
    if bad: j.ev("tool.call.started", "r", toolCallId="t1", toolName="x", executor="backend", args={})
    else: j.ev("run.cancelled", "r")
case("tool-after-stop", "6.3", "no new tool calls after run.stop.requested", "run_stop_requested", tool_after_stop)

def child_after_stop(j, bad):
    j.ev("run.started", "r")
    j.ev("run.stop.requested", "r", targetRunId="r")
    if bad: j.ev("run.started", "c", root="r", parentRunId="r")
    else: j.ev("run.cancelled", "r")
case("child-after-stop", "6.3", "no new child runs after run.stop.requested", "run_stop_requested", child_after_stop)

def stop_target(j, bad):
    j.ev("run.started", "r")
    j.ev("run.stop.requested", "r", targetRunId="ghost" if bad else "r")
case("stop-unknown-target", "7.4", "the stop target exists, is open and of the same journal", "stop_target_invalid", stop_target)

def resume_wait(j, bad):
    j.ev("run.started", "r")
    interrupt(j, "r")
    j.ev("interrupt.resolved", "r", interruptId="int-1", waitId="wait-1", decision="approve")
    j.ev("run.resumed", "r", waitId="wait-2" if bad else "wait-1")
case("resume-wrong-wait", "7.3", "run.resumed names the active pause's waitId", "wait_mismatch", resume_wait)

def decision(j, bad):
    j.ev("run.started", "r")
    interrupt(j, "r")
    j.ev("interrupt.resolved", "r", interruptId="int-1", waitId="wait-1", decision="maybe" if bad else "expired")
case("decision-not-offered", "7.7", "decision is one of the request's actions, or expired", "decision_invalid", decision)

def members(j, bad):
    j.ev("run.started", "r")
    interrupt(j, "r", actions=("approve", "deny", "stop"))
    m = [{"requestId": "m1", "decision": "approve"}, {"requestId": "m2", "decision": "deny"}]
    j.ev("interrupt.resolved", "r", interruptId="int-1", waitId="wait-1", decision="approve" if bad else "deny", members=m)
case("members-fold", "7.7", "with HITL members the decision is the fold (stop; all approve; all expired; else deny)", "members_fold_mismatch", members)

def second_interrupt(j, bad):
    # Run scope cannot reach this rule through a running run (the pause must
    # follow the interrupt at once, and a paused run requests nothing), so
    # the workflow scope carries the test.
    j.ev("workflow.started", wf="w")
    j.ev("interrupt.requested", wf="w", scope="workflow", interruptId="i1", waitId="x1", kind="approval", actions=["approve"])
    j.ev("workflow.paused", wf="w", waitId="x1", interruptId="i1")
    if not bad:
        j.ev("interrupt.resolved", wf="w", scope="workflow", interruptId="i1", waitId="x1", decision="approve")
        j.ev("workflow.resumed", wf="w", waitId="x1")
    j.ev("interrupt.requested", wf="w", scope="workflow", interruptId="i2", waitId="x2", kind="approval", actions=["approve"])
case("second-open-interrupt", "3.4", "at most one open interrupt per run or workflow", "interrupt_already_open", second_interrupt)

def adjacency(j, bad):
    j.ev("run.started", "r")
    j.ev("interrupt.requested", "r", interruptId="i", waitId="w", kind="approval", actions=["approve"])
    if bad: j.ev("tool.call.started", "r", toolCallId="t", toolName="x", executor="backend", args={})
    else: j.ev("run.paused", "r", waitId="w", reason="interrupt", resumeMode="command", interruptId="i")
case("interrupt-not-followed-by-pause", "7.6", "a run interrupt is followed consecutively by the matching run.paused", "interrupt_pause_adjacency", adjacency)

def wf_adjacency(j, bad):
    j.ev("workflow.started", wf="w")
    j.ev("interrupt.requested", wf="w", scope="workflow", interruptId="i", waitId="x", kind="approval", actions=["approve"])
    if bad: j.ev("workflow.step.started", wf="w", nodeId="n2")
    else: j.ev("workflow.paused", wf="w", waitId="x", interruptId="i")
case("workflow-interrupt-not-followed-by-pause", "7.6", "a workflow interrupt is followed consecutively in workflowSequence by workflow.paused", "interrupt_pause_adjacency", wf_adjacency)

def double_finish(j, bad):
    j.ev("run.started", "r")
    j.ev("tool.call.started", "r", toolCallId="t1", toolName="x", executor="backend", args={})
    j.ev("tool.call.finished", "r", toolCallId="t1", outcome="error", response={"e": 1}, code="x")
    if bad: j.ev("tool.call.finished", "r", toolCallId="t1", outcome="success", response=None)
    else: j.ev("run.finished", "r")
case("tool-finished-twice", "7.9", "exactly one finish per tool call", "tool_call_finished_twice", double_finish)

def reuse_tool(j, bad):
    j.ev("run.started", "r")
    j.ev("tool.call.started", "r", toolCallId="t1", toolName="x", executor="backend", args={})
    j.ev("tool.call.finished", "r", toolCallId="t1", outcome="success", response=None)
    j.ev("tool.call.started", "r", toolCallId="t1" if bad else "t2", toolName="x", executor="backend", args={})
case("tool-call-id-reused", "11.3", "a toolCallId is never reassigned", "tool_call_duplicate", reuse_tool)

def client_exec(j, bad):
    if bad: j.ev("run.started", "r")
    else: j.ev("run.started", "r", clientExecutorId="desk-1")
    j.ev("tool.call.started", "r", toolCallId="t1", toolName="open.file", executor="client", args={})
case("client-tool-without-executor", "3.3", "executor=client requires the run's clientExecutorId", "client_executor_missing", client_exec)

def wf_open(j, bad):
    j.ev("workflow.started", wf="w")
    j.ev("run.started", "a", wf="w")
    if not bad: j.ev("run.finished", "a", wf="w")
    j.ev("workflow.finished", wf="w")
case("workflow-terminal-with-open-run", "6.5", "no workflow terminal while a run of it is open", "workflow_open_runs", wf_open)

def parent(j, bad):
    j.ev("run.started", "r")
    j.ev("run.started", "c", root="r", **({} if bad else {"parentRunId": "r"}))
case("nested-run-without-parent", "3.3", "a nested run names an open, running parent of its lineage", "parent_invalid", parent)

def paused_parent(j, bad):
    j.ev("run.started", "r")
    j.ev("run.paused", "r", waitId="w", reason="capacity", resumeMode="automatic")
    if not bad: j.ev("run.resumed", "r", waitId="w")
    j.ev("run.started", "c", root="r", parentRunId="r")
case("nested-run-under-paused-parent", "3.3", "a nested run's parent is running", "parent_invalid", paused_parent)

def watch(j, bad):
    j.ev("run.started", "r")
    j.raw({"type": "session.revision", "protocolVersion": "narad/v1", "eventId": "w-1", "timestamp": "2026-08-05T00:00:02Z", "sessionId": "s-1", "revision": 5, "cursor": {"kind": "session", "sessionSequence": 1}})
    j.raw({"type": "session.revision", "protocolVersion": "narad/v1", "eventId": "w-2", "timestamp": "2026-08-05T00:00:03Z", "sessionId": "s-1", "revision": 4 if bad else 6, "cursor": {"kind": "session", "sessionSequence": 1}})
case("watch-revision-regress", "8", "watch revisions never regress within a scope", "watch_revision_regress", watch)

def paused_tool(j, bad):
    j.ev("run.started", "r")
    j.ev("run.paused", "r", waitId="w", reason="capacity", resumeMode="automatic")
    if not bad: j.ev("run.resumed", "r", waitId="w")
    j.ev("tool.call.started", "r", toolCallId="t1", toolName="x", executor="backend", args={})
case("tool-while-paused", "6.4", "no run work (tool calls) while paused", "run_not_running", paused_tool)

def msg(j, bad):
    j.ev("message.text.started", messageId="m1", role="assistant", messageScope="session")
    j.ev("message.text.delta", messageId="m1", delta="Hel")
    if not bad: j.ev("message.text.delta", messageId="m1", delta="lo")
    j.ev("message.text.completed", messageId="m1")
    if bad: j.ev("message.text.delta", messageId="m1", delta="late")
case("message-delta-after-completed", "9.2", "streamed text is appended only until the message completes", "message_completed", msg)

def msg_unknown(j, bad):
    j.ev("message.text.started", messageId="m1", role="assistant", messageScope="session")
    j.ev("message.text.delta", messageId="m2" if bad else "m1", delta="Hi")
case("message-delta-unknown", "9.2", "a delta belongs to a started message", "message_unknown", msg_unknown)

def msg_dup(j, bad):
    j.ev("message.user.recorded", messageId="u1", messageScope="session", content="hi")
    j.ev("message.user.recorded", messageId="u1" if bad else "u2", messageScope="session", content="again")
case("message-id-reused", "9.2", "a messageId identifies one message", "message_duplicate", msg_dup)

def reasoning(j, bad):
    j.ev("reasoning.started", reasoningId="reasoning:m1", messageId="m1")
    j.ev("reasoning.delta", reasoningId="reasoning:m0" if bad else "reasoning:m1", delta="thinking")
case("reasoning-delta-unknown", "9.2", "reasoning deltas join a started reasoning id", "reasoning_unknown", reasoning)

def state_gap(j, bad):
    j.ev("state.snapshot", scope="session", revision=1, state={"a": 1})
    j.ev("state.delta", scope="session", baseRevision=2 if bad else 1, revision=3 if bad else 2, patch=[{"op": "replace", "path": "/a", "value": 2}])
case("state-delta-gap", "9.6", "a delta applies to the document's current revision", "document_revision_gap", state_gap)

def state_patch(j, bad):
    j.ev("state.snapshot", scope="session", revision=1, state={"a": 1})
    j.ev("state.delta", scope="session", baseRevision=1, revision=2, patch=[{"op": "remove", "path": "/missing" if bad else "/a"}])
case("state-patch-fails", "9.6", "an RFC 6902 patch must apply to the document", "patch_failed", state_patch)

def state_regress(j, bad):
    j.ev("ui.state.snapshot", scope="session", revision=3, state={})
    j.ev("ui.state.snapshot", scope="session", revision=2 if bad else 4, state={"x": 1})
case("ui-snapshot-regress", "9.6", "a document snapshot advances its revision", "document_revision_regress", state_regress)

def compaction(j, bad):
    j.ev("state.snapshot", scope="session", revision=2, state={})
    j.ev("state.compacted", scope="session", coversThroughSessionSequence=1, snapshotRevision=5 if bad else 2)
case("state-compaction-ahead", "9.6", "state.compacted names a revision the document reached", "compaction_ahead", compaction)

def view(j, bad):
    j.ev("view.opened", viewId="v1", model={"rows": []})
    j.ev("view.updated", viewId="v2" if bad else "v1", operation="patch", patch=[{"op": "add", "path": "/rows/-", "value": 1}])
case("view-update-not-open", "9.6", "a view is updated only while open", "view_not_open", view)

def attachment(j, bad):
    if not bad: j.ev("attachment.added", attachmentId="a1")
    j.ev("attachment.ready", attachmentId="a1")
case("attachment-ready-before-added", "9.5", "an attachment is added before it is ready, failed or removed", "lifecycle_unknown", attachment)

def artifact(j, bad):
    j.ev("artifact.added", artifactId="x1")
    j.ev("artifact.ready", artifactId="x1")
    if bad: j.ev("artifact.failed", artifactId="x1")
case("artifact-after-ready", "9.5", "an artifact becomes ready or failed once", "lifecycle_invalid", artifact)

def ctl(j, ty, **fields):
    j.raw(dict({"type": ty, "protocolVersion": "narad/v1"}, **fields))

def client_setup(j):
    ctl(j, "client.attached", clientExecutorId="desk", leaseId="lease-1", heartbeatIntervalMs=15000, leaseExpiresAt="2026-08-05T00:01:00Z")
    j.ev("run.started", "r", clientExecutorId="desk")
    j.ev("tool.call.started", "r", toolCallId="t1", toolName="open.file", executor="client", args={"path": "a"})

def execute(j, lease="lease-1", token="tok-1", executor="desk", args=None):
    ctl(j, "client.tool.execute", clientExecutorId=executor, leaseId=lease, executionToken=token, executionTokenExpiresAt="2026-08-05T00:01:00Z", toolCallId="t1", toolName="open.file", args=args or {"path": "a"})

def finish(j, lease="lease-1", token="tok-1", outcome="success", response=None):
    ctl(j, "client.tool.finish", clientExecutorId="desk", leaseId=lease, executionToken=token, toolCallId="t1", outcome=outcome, response=response if response is not None else {"ok": True})

def misdirected(j, bad):
    client_setup(j)
    execute(j, executor="other" if bad else "desk")
case("client-execute-misdirected", "11.3", "client.tool.execute goes to the run's bound executor only", "execute_misdirected", misdirected)

def payload(j, bad):
    client_setup(j)
    execute(j, args={"path": "b"} if bad else None)
case("client-execute-payload-mismatch", "11.3", "execute toolName and args equal tool.call.started", "execute_payload_mismatch", payload)

def reattach(j):
    """The executor attaches again: lease-2 supersedes lease-1."""
    ctl(j, "client.attached", clientExecutorId="desk", leaseId="lease-2", heartbeatIntervalMs=15000, leaseExpiresAt="2026-08-05T00:02:00Z")

def superseded(j, bad):
    client_setup(j)
    reattach(j)
    execute(j, lease="lease-1" if bad else "lease-2")
case("client-execute-on-superseded-lease", "11.1", "a superseded lease accepts no new execution", "lease_invalid", superseded)

def new_lease_claims(j, bad):
    client_setup(j)
    execute(j)
    reattach(j)
    finish(j, lease="lease-2" if bad else "lease-1")
case("client-finish-from-new-lease", "11.3", "a finish uses the token's originating lease; the new lease cannot claim it", "token_mismatch", new_lease_claims)

def finish_conflict(j, bad):
    client_setup(j)
    execute(j)
    finish(j)
    finish(j, outcome="error" if bad else "success")
case("client-finish-conflict", "11.3", "a repeated finish is identical (idempotent) or refused", "finish_conflict", finish_conflict)

def finished_mismatch(j, bad):
    client_setup(j)
    execute(j)
    finish(j)
    j.ev("tool.call.finished", "r", toolCallId="t1", outcome="success", response={"ok": False} if bad else {"ok": True})
case("client-finished-not-equal-to-finish", "11.3", "tool.call.finished equals the accepted client.tool.finish", "finish_mismatch", finished_mismatch)

def finish_missing(j, bad):
    client_setup(j)
    execute(j)
    if bad: j.ev("tool.call.finished", "r", toolCallId="t1", outcome="success", response=None)
    else: j.ev("tool.call.finished", "r", toolCallId="t1", outcome="error", response=None, code="client_execution_expired")
case("client-closed-without-finish", "11.3", "without a finish a client call closes with a backend closure code or as cancelled after stop", "client_finish_missing", finish_missing)

def second_execute(j, bad):
    client_setup(j)
    execute(j)
    execute(j, token="tok-2" if bad else "tok-1")
case("client-second-execute", "11.3", "exactly one execution per client tool call; redelivery repeats the same token", "execute_duplicate", second_execute)

def heartbeat(j, bad):
    client_setup(j)
    ctl(j, "client.heartbeat", clientExecutorId="desk", leaseId="lease-9" if bad else "lease-1")
case("client-heartbeat-unknown-lease", "11.2", "a heartbeat names a lease attached for its executor", "lease_invalid", heartbeat)

rows = []
for name, (ok, bad, line, code, section, rule) in cases.items():
    open(f"{name}.jsonl", "w").write(ok.text())
    open(f"{name}.invalid.jsonl", "w").write(bad.text())
    rows.append(f"{name}\t{line}\t{code}\t{section}\t{rule}\n")
open("expected.tsv", "w").write("# trace\tline\tcode\tsection\trule\n" + "".join(rows))

# The rule table of ../NOTES.md ("Journal rules and their traces"): the same
# rows, ordered by section (stable within one).
header = ["| § | rule | code | traces |", "|---|---|---|---|"]
table = [f"| {section} | {rule} | `{code}` | `{name}` |"
         for name, (_, _, _, code, section, rule) in
         sorted(cases.items(), key=lambda c: tuple(int(p) for p in c[1][4].split(".")))]
notes = open("../NOTES.md").read().split("\n")
start = notes.index(header[0])
end = start + len(header)
while end < len(notes) and notes[end].startswith("|"):
    end += 1
open("../NOTES.md", "w").write("\n".join(notes[:start] + header + table + notes[end:]))
print(f"{len(cases)} rules, {2 * len(cases)} traces, NOTES.md rule table rewritten")
