package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// The records of contracts.State that grow as the delegation goes on each
// have one writer here; the rest of State is written where its step is
// (observe the task's ids and state, adopt the card, ask the question).

// recordSend records what became of one send of a round (State.Sends), at
// the workflow's time now.
func (r *run) recordSend(ctx workflow.Context, rec contracts.SendRecord) {
	rec.At = workflow.Now(ctx)
	r.s.Sends = append(r.s.Sends, rec)
}

// recordAnswer records an operator's answer (State.Answers), sent or not.
func (r *run) recordAnswer(rec contracts.AnswerRecord) {
	r.s.Answers = append(r.s.Answers, rec)
}

// lastAnswer is the last answer recorded, to say what became of it; the
// caller has recorded one.
func (r *run) lastAnswer() *contracts.AnswerRecord {
	return &r.s.Answers[len(r.s.Answers)-1]
}

// closeQuestion takes the question down (State.Question): it was answered,
// the task moved on, or the next run asks it again.
func (r *run) closeQuestion() {
	r.s.Question = nil
}

// keepLate keeps artifacts the agent made after the delegation stopped
// (State.LateResults): recorded, never turned into outputs.
func (r *run) keepLate(artifacts []contracts.Artifact) {
	r.s.LateResults = append(r.s.LateResults, artifacts...)
}
