package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
)

// resolve runs ResolveCard; a transient failure (agent unreachable, 5xx)
// is retried with backoff until the deadline.
func (r *run) resolve(ctx workflow.Context) (activities.ResolvedCard, error) {
	var card activities.ResolvedCard
	opts := resolveOptions()
	if r.v >= VersionFollowAgents {
		opts.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
	}
	in := activities.ResolveCardInput{CardURL: r.d.AgentCardURL, Skill: r.d.Skill, RequireSignature: r.d.RequireSignedCard}
	_, err := r.retrying(ctx, "ResolveCard", func() error {
		return r.localActivity(ctx, opts, "ResolveCard", in, &card)
	}, func() error {
		return r.activity(ctx, r.handoverOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second}), "ResolveCard", in, &card)
	})
	return card, err
}

// adopt makes a resolved card the one the delegation uses.
func (r *run) adopt(ctx workflow.Context, card activities.ResolvedCard) {
	r.s.Agent = card.Agent
	r.s.Signature = card.Verification
	r.s.Interface = card.Interface
	r.s.InputModes = card.InputModes
	r.s.Streaming = card.Streaming
	r.s.Protocol = contracts.ProtocolInfo{Version: card.Interface.Version, Binding: card.Interface.Binding, URL: card.Interface.URL}
	r.setSA(SearchA2AAgent.ValueSet(contracts.Truncate(card.Agent.Name, contracts.MaxKeyword)))
}

// cardChange says what changed between the card in use and a new one in a
// way that matters to this delegation, or "" when nothing selected did
// (A2A 1.0 §8.6: a card may change under a running task).
func (r *run) cardChange(card activities.ResolvedCard) string {
	return activities.CardChange(activities.CardInUse{Interface: r.s.Interface, Signature: r.s.Signature}, card, r.d.Skill)
}

// recheckCard resolves the card again before a follow-up (cheap with the
// fetcher's cache). A change that touches nothing selected is recorded;
// one that matters stops the delegation in state "card-changed" until an
// operator sends Signal "rediscover" (the new card is then negotiated
// again and used), the deadline (status card_changed) or cancellation.
//
// This is the path of delegations recorded before VersionLean; from
// VersionLean the CheckAndSend activity reads the card in the same call as
// the send, and checksend.go acts on what it found.
func (r *run) recheckCard(ctx workflow.Context) error {
	for {
		card, err := r.resolve(ctx)
		if err != nil {
			return err
		}
		what := r.cardChange(card)
		if card.Agent.CardDigest != r.s.Agent.CardDigest || what != "" {
			r.s.CardChanges = append(r.s.CardChanges, contracts.CardChange{At: workflow.Now(ctx), OldDigest: r.s.Agent.CardDigest,
				NewDigest: card.Agent.CardDigest, Matters: what != "", What: what, Accepted: r.rediscover})
		}
		if what == "" || r.rediscover {
			if what == "" || (card.SkillFound && card.InterfaceError == "" && card.Trusted()) {
				r.adopt(ctx, card)
				r.rediscover = false
				return nil
			}
			if r.rediscover && !card.Trusted() {
				return r.untrustedAfterRediscover(card)
			}
		}
		prev := r.s.A2AState
		if err := r.awaitRediscover(ctx, card.Agent.CardDigest, what); err != nil {
			return err
		}
		r.setState(ctx, prev)
	}
}

// untrustedAfterRediscover: a required signature fails on the card the
// operator accepted; that ends the delegation, nothing sent.
func (r *run) untrustedAfterRediscover(card activities.ResolvedCard) error {
	r.s.Signature = card.Verification
	r.s.Agent.Signature = card.Agent.Signature
	return &untrustedError{verification: card.Verification}
}

// awaitRediscover stops the delegation in "card-changed" (the card changed
// to newDigest in a way that matters: what) until an operator sends Signal
// "rediscover" (nil), the deadline (*cardChangedError) or another stop. The
// caller restores its state after.
func (r *run) awaitRediscover(ctx workflow.Context, newDigest, what string) error {
	r.rediscover = false
	change := contracts.CardChange{OldDigest: r.s.Agent.CardDigest, NewDigest: newDigest, What: what}
	r.setState(ctx, string(contracts.PhaseCardChanged))
	r.flushSA(ctx)
	workflow.SetCurrentDetails(ctx, cardChangedDetails(r.s, &change, r.wfID))
	r.arm(ctx)
	if err := workflow.Await(ctx, func() bool { return r.rediscover || r.interrupt() != nil }); err != nil {
		return err
	}
	if !r.rediscover {
		if errors.Is(r.interrupt(), errDeadline) {
			return &cardChangedError{change: change}
		}
		return r.interrupt()
	}
	return nil
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}
