package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// adopt makes a resolved card the one the delegation uses.
func (r *run) adopt(ctx workflow.Context, card contracts.ResolvedCard) {
	r.s.Agent = card.Agent
	r.s.Signature = card.Verification
	r.s.Interface = card.Interface
	r.s.InputModes = card.InputModes
	r.s.Streaming = card.Streaming
	r.s.Protocol = contracts.ProtocolInfo{Version: card.Interface.Version, Binding: card.Interface.Binding, URL: card.Interface.URL, DeclaredVersion: card.Interface.DeclaredVersion}
	r.setSA(SearchA2AAgent.ValueSet(contracts.Truncate(card.Agent.Name, contracts.MaxKeyword)))
}

// untrustedAfterRediscover: a required signature fails on the card the
// operator accepted; that ends the delegation, nothing sent.
func (r *run) untrustedAfterRediscover(card contracts.ResolvedCard) error {
	r.s.Signature = card.Verification
	r.s.Agent.Signature = card.Agent.Signature
	return untrusted(card.Verification)
}

// awaitRediscover stops the delegation in "card-changed" (the card changed
// to newDigest in a way that matters: what) until an operator sends Signal
// "rediscover" (nil), the deadline (cardChanged) or another stop. The
// caller restores its state after.
func (r *run) awaitRediscover(ctx workflow.Context, newDigest, what string) error {
	r.box.dropRediscover()
	change := contracts.CardChange{OldDigest: r.s.Agent.CardDigest, NewDigest: newDigest, What: what}
	r.setState(ctx, string(contracts.PhaseCardChanged))
	r.flushSA(ctx)
	workflow.SetCurrentDetails(ctx, cardChangedDetails(r.s, &change, r.wfID))
	if err := r.wait(ctx, byDeadline, r.box.rediscoverAccepted); err != nil {
		return err
	}
	if !r.box.rediscoverAccepted() {
		if isDeadline(r.interrupt()) {
			return cardChanged(change)
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
