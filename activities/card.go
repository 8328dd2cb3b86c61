package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// ResolveCard fetches the Agent Card through the HTTP guard (or the
// cache), verifies its signatures against the trust store (A2A 1.0
// §8.4.3), looks up the skill, and selects the interface (A2A 1.0 §8.3),
// which must pass the guard. Errors: "transient" (fetch failed, 5xx),
// "card" (refused by the guard, malformed, too large).
func (a *Activities) ResolveCard(ctx context.Context, in contracts.ResolveCardInput) (contracts.ResolvedCard, error) {
	ctx = withDelegation(ctx, "", contracts.Interface{}, in.CardURL)
	f := a.fetcher()
	card, err := f.Fetch(ctx, in.CardURL)
	if err != nil {
		var ce *cards.Error
		if errors.As(err, &ce) && ce.Transient() {
			return contracts.ResolvedCard{}, a.fail(ctx, "ResolveCard", contracts.CategoryTransient, err)
		}
		return contracts.ResolvedCard{}, a.fail(ctx, "ResolveCard", contracts.CategoryCard, err)
	}
	public := card
	var extErr error
	if card.Parsed.Capabilities.ExtendedAgentCard {
		card, extErr = a.ExtendedCard(ctx, card)
		if extErr != nil {
			var ae *temporal.ApplicationError
			if errors.As(extErr, &ae) {
				return contracts.ResolvedCard{}, extErr // transient: retried
			}
		}
	}
	out := contracts.ResolvedCard{
		Agent: contracts.AgentInfo{
			Name: card.Parsed.Name, CardURL: card.URL, CardVersion: card.Parsed.Version, CardDigest: card.Digest,
			Signature: card.Verification.Label(),
		},
		Streaming:         card.Parsed.Capabilities.Streaming,
		PushNotifications: card.Parsed.Capabilities.PushNotifications,
		Verification:      card.Verification,
		SignatureRequired: in.RequireSignature || f.RequireSignature(card.Origin),
	}
	if card != public {
		// The extended card is used: the public card's identity stays, the
		// extended card's digest and signature are recorded, and a required
		// signature is required of both (the first that fails is kept).
		out.Agent.CardDigest, out.Agent.Signature = public.Digest, public.Verification.Label()
		out.Agent.ExtendedCardDigest, out.Agent.ExtendedCardSignature = card.Digest, card.Verification.Label()
		if public.Verification.Status != contracts.SigVerified {
			out.Verification = public.Verification
		}
	} else if extErr != nil {
		out.ExtendedCardError = contracts.CutText(extErr.Error(), 1024)
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
	iface, err := selectInterface(f, card)
	if err != nil {
		out.InterfaceError = err.Error()
	} else {
		iface.CardOrigin = card.Origin
		iface.Auth = a.schemeOf(card, iface)
		out.Interface = iface
	}
	a.observeCard(out.Verification)
	a.log(ctx).Info("agent card resolved", "card_digest", card.Digest,
		"signature", out.Agent.Signature, "from_cache", card.FromCache)
	return out, nil
}

// selectInterface selects the card's interface through the guard of its
// origin (A2A 1.0 §8.3).
func selectInterface(f *cards.Fetcher, card *cards.Card) (contracts.Interface, error) {
	g := f.Guard()
	return cards.SelectInterface(card.Parsed, func(u string) error { return g.CheckInterface(u, card.Origin) })
}

// schemeOf is the scheme calls on iface are authenticated with: the one
// the worker's store can meet for the interface's origin, when the card
// offers several (A2A 1.0 §4.5; cards.SchemeOf).
func (a *Activities) schemeOf(card *cards.Card, iface contracts.Interface) *contracts.AuthScheme {
	origin, _ := cards.InterfaceOrigin(iface)
	return cards.SchemeOf(card.Parsed, func(kind string) bool { return a.Credentials.Satisfies(origin, kind) })
}

// errNoExtendedCredentials: the card declares an extended card, and the
// worker holds no credentials for the agent's origin to fetch it with.
var errNoExtendedCredentials = errors.New("the card declares an authenticated extended card (capabilities.extendedAgentCard), and the worker's credential store holds no credentials for the agent's origin")

// ExtendedCard fetches the authenticated extended Agent Card (A2A 1.0
// §3.1.11) over the interface selected from the public card, with the
// credentials of that interface's origin, and returns it parsed and
// verified like the public card (cards.Fetcher.Extended). It returns the
// public card and an error saying why when it cannot be used: no
// credentials for the origin, no interface, refused (401/403,
// unsupported), malformed. A transient failure (unreachable, 5xx) is an
// activity error, retried like the card fetch.
func (a *Activities) ExtendedCard(ctx context.Context, public *cards.Card) (*cards.Card, error) {
	f := a.fetcher()
	iface, err := selectInterface(f, public)
	if err != nil {
		return public, err
	}
	iface.CardOrigin = public.Origin
	iface.Auth = a.schemeOf(public, iface)
	origin, err := cards.InterfaceOrigin(iface)
	if err != nil {
		return public, err
	}
	if _, ok := a.Credentials.ForOrigin(origin); !ok {
		return public, errNoExtendedCredentials
	}
	c, err := a.dial(ctx, iface, "", contracts.Limits{})
	if err != nil {
		return public, err
	}
	defer c.Close()
	raw, err := c.GetExtendedAgentCard(ctx)
	if err != nil {
		var ce *a2aclient.CallError
		if errors.As(err, &ce) && ce.Category == contracts.CategoryTransient {
			return public, a.fail(ctx, "ResolveCard", contracts.CategoryTransient, err)
		}
		return public, err
	}
	ext, err := f.Extended(ctx, public, raw)
	if err != nil {
		return public, err
	}
	a.log(ctx).Info("extended agent card used", "card_digest", public.Digest,
		"extended_card_digest", ext.Digest, "signature", ext.Verification.Label())
	return ext, nil
}
