package activities

import (
	"context"
	"errors"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// ResolveCardInput names the card and the skill a delegation needs.
type ResolveCardInput struct {
	CardURL string `json:"card_url"`
	Skill   string `json:"skill"`
	// RequireSignature is the contract's require_signed_card.
	RequireSignature bool `json:"require_signature,omitempty"`
}

// ResolvedCard is what the workflow keeps of a resolved card. The
// workflow decides what a missing skill, a missing interface or an
// unverified signature means (first resolution or change detection).
type ResolvedCard struct {
	Agent contracts.AgentInfo `json:"agent"`
	// SkillFound reports whether the card offers the skill.
	SkillFound bool `json:"skill_found"`
	// Skills are the ids of the skills the card offers, when it does not
	// offer the contract's (the first 20, each cut to 100 bytes), so the
	// refusal can name them.
	Skills []string `json:"skills,omitempty"`
	// Interface is the selected interface; InterfaceError says why there
	// is none.
	Interface      contracts.Interface `json:"interface"`
	InterfaceError string              `json:"interface_error,omitempty"`
	Streaming      bool                `json:"streaming"`
	// PushNotifications is the card's capabilities.pushNotifications (A2A
	// 1.0 §4.4.3): the agent can push the task's changes.
	PushNotifications bool `json:"push_notifications,omitempty"`
	// InputModes are the media types the skill accepts: its inputModes, or
	// the card's defaultInputModes (A2A 1.0 §4.4.5); empty when undeclared.
	InputModes []string `json:"input_modes,omitempty"`
	// Verification is the signature check against the trust store.
	Verification contracts.CardVerification `json:"verification"`
	// SignatureRequired is true when the contract or the trust store
	// requires a verified signature.
	SignatureRequired bool `json:"signature_required"`
}

// Trusted reports whether the card may be used: verified, or no signature
// required.
func (r ResolvedCard) Trusted() bool {
	return !r.SignatureRequired || r.Verification.Status == contracts.SigVerified
}

// ResolveCard fetches the Agent Card through the HTTP guard (or the
// cache), verifies its signatures against the trust store (A2A 1.0
// §8.4.3), looks up the skill, and selects the interface (A2A 1.0 §8.3),
// which must pass the guard. Errors: "transient" (fetch failed, 5xx),
// "card" (refused by the guard, malformed, too large).
func (a *Activities) ResolveCard(ctx context.Context, in ResolveCardInput) (ResolvedCard, error) {
	f := a.fetcher()
	card, err := f.Fetch(ctx, in.CardURL)
	if err != nil {
		var ce *cards.Error
		if errors.As(err, &ce) && ce.Transient() {
			return ResolvedCard{}, a.fail(ctx, "ResolveCard", contracts.CategoryTransient, err)
		}
		return ResolvedCard{}, a.fail(ctx, "ResolveCard", contracts.CategoryCard, err)
	}
	out := ResolvedCard{
		Agent: contracts.AgentInfo{
			Name: card.Parsed.Name, CardURL: card.URL, CardVersion: card.Parsed.Version, CardDigest: card.Digest,
			Signature: card.Verification.Label(),
		},
		Streaming:         card.Parsed.Capabilities.Streaming,
		PushNotifications: card.Parsed.Capabilities.PushNotifications,
		Verification:      card.Verification,
		SignatureRequired: in.RequireSignature || f.RequireSignature(card.Origin),
	}
	skill, ok := cards.FindSkill(card.Parsed, in.Skill)
	out.SkillFound = ok
	if !ok {
		for _, sk := range card.Parsed.Skills {
			if len(out.Skills) == 20 {
				break
			}
			out.Skills = append(out.Skills, contracts.CutText(sk.ID, 100))
		}
	}
	out.InputModes = skill.InputModes
	if len(out.InputModes) == 0 {
		out.InputModes = card.Parsed.DefaultInputModes
	}
	g := f.Guard()
	iface, err := cards.SelectInterface(card.Parsed, func(u string) error { return g.CheckInterface(u, card.Origin) })
	if err != nil {
		out.InterfaceError = err.Error()
	} else {
		iface.CardOrigin = card.Origin
		// The scheme the worker's store can meet for the interface's
		// origin, when the card offers several (A2A 1.0 §4.5).
		origin, _ := cards.Origin(iface.URL)
		iface.Auth = cards.SchemeOf(card.Parsed, func(kind string) bool { return a.Credentials.Satisfies(origin, kind) })
		out.Interface = iface
	}
	a.logger().Info("agent card resolved", "workflow_id", workflowID(ctx), "card_digest", card.Digest,
		"signature", out.Agent.Signature, "from_cache", card.FromCache)
	return out, nil
}
