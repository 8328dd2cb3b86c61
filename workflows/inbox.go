package workflows

import "github.com/a2adelegate/delegate/contracts"

// inbox is what the other coroutines of a run hand to the main one: the
// listener (Signals, handlers.go), the Update handlers (input.go,
// handlers.go) and the reconcile reads (reconcile.go) offer, and the main
// coroutine takes (or drops what it no longer waits for). Workflow
// coroutines never run at the same time, so the inbox needs no lock: it
// only keeps the hand-over in one place. Everything in it is carried to
// the next run on continue-as-new (carry, restore).
type inbox struct {
	// answer is an operator's answer to the question shown, not yet
	// taken; via is how it came ("signal" or "update").
	answer *contracts.Answer
	via    string
	// answerCarried: answer was handed over by the previous run, for the
	// question this run asks again first.
	answerCarried bool
	// resolution is an operator's resolution of an unknown outcome.
	resolution *contracts.Resolution
	// rediscover: an operator accepted the agent's new card.
	rediscover bool
	// revoked is the reason of a revoke; it never goes away.
	revoked *string
	// pushed: a push for the task arrived and was not acted on yet.
	pushed bool
	// reconciled is a task a reconcile read saw changed, for the main
	// coroutine to go on from.
	reconciled *contracts.TaskSnapshot
	// reconcileAsked: a reconcile request was drained before a
	// continue-as-new, not read; reconciling: a reconcile read is running.
	reconcileAsked bool
	reconciling    bool
}

// offerAnswer hands over an operator's answer, received via "signal" or
// "update" (the checks are the caller's).
func (b *inbox) offerAnswer(a contracts.Answer, via string) { b.answer, b.via = &a, via }

// hasAnswer reports whether an answer waits to be taken.
func (b *inbox) hasAnswer() bool { return b.answer != nil }

// takeAnswer returns the answer waiting (hasAnswer) and how it came, and
// empties its place.
func (b *inbox) takeAnswer() (contracts.Answer, string) {
	a, via := *b.answer, b.via
	b.answer = nil
	return a, via
}

// dropAnswer forgets an answer not taken (a new question is shown).
func (b *inbox) dropAnswer() { b.answer = nil }

// dropAnswerOfAnotherQuestion drops an answer before a question is asked,
// unless it is the one the previous run accepted for this same question
// and handed over (restore): the operator was told it was accepted.
func (b *inbox) dropAnswerOfAnotherQuestion() {
	if !b.answerCarried {
		b.answer = nil
	}
	b.answerCarried = false
}

// offerResolution hands over a resolution from Signal "resolve-unknown":
// the first one stands.
func (b *inbox) offerResolution(res contracts.Resolution) {
	if b.resolution == nil {
		b.resolution = &res
	}
}

// putResolution hands over a resolution from Update "resolve-unknown",
// whose validator refused it if one was already given.
func (b *inbox) putResolution(res contracts.Resolution) { b.resolution = &res }

// hasResolution reports whether a resolution waits to be taken.
func (b *inbox) hasResolution() bool { return b.resolution != nil }

// takeResolution returns the resolution waiting (hasResolution) and empties
// its place.
func (b *inbox) takeResolution() contracts.Resolution {
	res := *b.resolution
	b.resolution = nil
	return res
}

// dropResolution forgets a resolution not taken (a new unknown outcome is
// asked about).
func (b *inbox) dropResolution() { b.resolution = nil }

// acceptRediscover notes an operator's Signal "rediscover".
func (b *inbox) acceptRediscover() { b.rediscover = true }

// rediscoverAccepted reports whether an operator accepted the new card.
func (b *inbox) rediscoverAccepted() bool { return b.rediscover }

// dropRediscover forgets an acceptance (the card is adopted, or a new
// change is waited for).
func (b *inbox) dropRediscover() { b.rediscover = false }

// revoke notes a revoke with its reason; false when one was noted before
// (the first stands).
func (b *inbox) revoke(reason string) bool {
	if b.revoked != nil {
		return false
	}
	b.revoked = &reason
	return true
}

// isRevoked reports whether a revoke was noted, and returns its reason.
func (b *inbox) isRevoked() (string, bool) {
	if b.revoked == nil {
		return "", false
	}
	return *b.revoked, true
}

// offerPush notes a push for the task.
func (b *inbox) offerPush() { b.pushed = true }

// hasPush reports whether a push waits to be acted on.
func (b *inbox) hasPush() bool { return b.pushed }

// dropPush forgets the push waiting: a read that will see the change is
// running or starts now.
func (b *inbox) dropPush() { b.pushed = false }

// offerReconciled hands over a task a reconcile read saw changed.
func (b *inbox) offerReconciled(snap contracts.TaskSnapshot) { b.reconciled = &snap }

// hasReconciled reports whether a reconciled task waits to be taken.
func (b *inbox) hasReconciled() bool { return b.reconciled != nil }

// takeReconciled returns the reconciled task waiting (hasReconciled) and
// empties its place.
func (b *inbox) takeReconciled() contracts.TaskSnapshot {
	snap := *b.reconciled
	b.reconciled = nil
	return snap
}

// dropReconciled forgets a reconciled task not taken (a new wait starts).
func (b *inbox) dropReconciled() { b.reconciled = nil }

// askReconcile notes a reconcile request that is carried, not read.
func (b *inbox) askReconcile() { b.reconcileAsked = true }

// startReconcile notes that a reconcile read starts; false when one is
// running already.
func (b *inbox) startReconcile() bool {
	if b.reconciling {
		return false
	}
	b.reconciling = true
	return true
}

// endReconcile notes that the reconcile read ended.
func (b *inbox) endReconcile() { b.reconciling = false }

// carry puts what the inbox holds into the next run's carry.
func (b *inbox) carry(c *contracts.Carry) {
	c.Revoked, c.Pending, c.PendingVia = b.revoked, b.answer, b.via
	c.Resolution, c.Rediscover, c.Pushed = b.resolution, b.rediscover, b.pushed
	c.Reconcile = b.reconcileAsked || b.reconciling
}

// restore takes what a previous run carried, but the revoke and the
// reconcile request, which resume applies.
func (b *inbox) restore(c *contracts.Carry) {
	b.answer, b.via = c.Pending, c.PendingVia
	b.answerCarried = c.Pending != nil
	b.resolution, b.rediscover = c.Resolution, c.Rediscover
	b.pushed = c.Pushed
}
