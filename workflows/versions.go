package workflows

import "go.temporal.io/sdk/workflow"

// ChangeFollowAgents is the workflow.GetVersion change id of the rules
// that follow independent agents exactly: a republished question never
// opens a round, the task is read at the waiting cadence while an operator
// is asked, transient card and send failures are retried by the workflow
// (showing the last error) until the deadline, and a follow-up that fails
// is checked against the task's own state. Histories recorded before it
// replay with workflow.DefaultVersion.
const ChangeFollowAgents = "follow-independent-agents"

// Versions of ChangeFollowAgents.
const (
	// VersionFollowAgents: the rules above.
	VersionFollowAgents workflow.Version = 1
	// VersionCarryInput: continue-as-new hands the state over as the
	// workflow's second input (contracts.Carry), with the signals drained and the
	// intents not yet acted on; before it, in the memo.
	VersionCarryInput workflow.Version = 2
	// VersionSendInFlight: a send interrupted (cancel, deadline, revoke)
	// while in flight is not abandoned: it is awaited for SendSettle at
	// most, and the task it created is recorded (then canceled).
	VersionSendInFlight workflow.Version = 3
	// VersionQuestionInNextRun: a run that continues as new at a question
	// does so before observing it; the next run shows it.
	VersionQuestionInNextRun workflow.Version = 4
	// VersionLean: a delegation costs what the protocol needs. The card
	// check, the authorization and the send are one activity
	// (CheckAndSend: no local-activity markers, no upsert before it); the
	// deadline timer starts only when the delegation first waits (a send
	// is bounded by its own timeouts); a question is waited on with one
	// timer, the next read or the deadline, whichever comes first, and
	// the task is then read at the waiting cadence (PollTask).
	VersionLean workflow.Version = 5
	// VersionOneSpelling: A2AState spells a send whose outcome is unknown
	// "unknown-outcome", like every other value (before: "unknown_outcome",
	// contracts.FormerA2AStates).
	VersionOneSpelling workflow.Version = 6
	// VersionPush: a task whose agent pushes its changes (State.Push) is
	// not polled while it works: it is read when a push arrives (Signal
	// "task-update") or at the waiting cadence, whichever comes first;
	// while an operator is asked, a push reads it at once.
	VersionPush workflow.Version = 7
	// VersionGuardHistory: a delegation waiting for an operator or
	// watching its task continues as new as soon as Temporal suggests it
	// or its history is past Options.WaitingHistoryEvents or
	// MaxRunHistoryBytes (a flood of junk signals cannot fill a run up to
	// the server's limits, where Signals, revoke among them, would be
	// refused or the run terminated); and a cancel that finds the task
	// completed keeps its artifacts as late results (cancel_unconfirmed).
	VersionGuardHistory workflow.Version = 8
	// VersionPushState: a delegation followed by push publishes its state
	// (search attributes) before it waits for a push, a reconcile that
	// sees the task changed moves it on at once, as one waiting for an
	// operator does, and a run flooded by pushes continues as new instead
	// of reading the task over and over.
	VersionPushState workflow.Version = 9
	// VersionSealedSignals: a Signal whose payload is sealed with a key
	// the worker lacks (codec) is received and refused by name (a revoke
	// still revokes); before it the Go SDK dropped it and the listener
	// waited for the next Signal on that channel. And a message whose
	// data is [] (contract or answer) is refused (contracts.EmptyListRule),
	// and so is a resolution naming a task_id with resend or abandon, and
	// an answer that arrives while the delegation is stopping.
	VersionSealedSignals workflow.Version = 10
	// VersionLatest is the version new delegations run.
	VersionLatest = VersionSealedSignals
)
