package a2aclient

import (
	"time"

	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2adelegate/delegate/contracts"
)

// MaxExtendedCardBytes bounds the extended Agent Card read from an agent,
// as cards.DefaultMaxBytes bounds the public one (1 MiB).
const MaxExtendedCardBytes = 1 << 20

// GetExtendedAgentCard fetches the authenticated extended Agent Card (A2A
// 1.0 §3.1.11; JSON-RPC method GetExtendedAgentCard §9.4.8, HTTP+JSON
// GET /extendedAgentCard §11, 0.3 agent/getAuthenticatedExtendedCard) with
// the client's credentials, and returns it as JSON: over JSON-RPC and
// HTTP+JSON the card exactly as received (the JSON-RPC result member), so
// that package cards digests and verifies what the agent signed; over
// transports that do not hand out their bytes (gRPC), a2a-go's JSON of
// the card it decoded. The body is bounded like every reply
// (Options.MaxResponseBytes) and then by MaxExtendedCardBytes; the
// secrets the client sends are redacted from it.
//
// Why the bytes are taken at the wire seam: a2a-go v2.4.0 decodes the
// card with its own model, which refuses a card whose securityRequirements
// are in A2A 1.0's proto JSON form (a2a-go#430) and would lose the form a
// signature covers. A reply that a2a-go could not decode but that is a
// 2xx JSON-RPC result is still returned for package cards to judge.
// Errors are *CallError (a 401/403 is authorization; an agent that does
// not offer it answers UnsupportedOperation or ExtendedAgentCardNotConfigured:
// protocol).
func (c *Client) GetExtendedAgentCard(ctx context.Context) (b []byte, err error) {
	defer c.observe("GetExtendedAgentCard", time.Now(), &err)
	b, err = c.getExtendedAgentCard(ctx)
	return c.red.bytes(b), c.finish(err)
}

func (c *Client) getExtendedAgentCard(ctx context.Context) ([]byte, error) {
	const op = "GetExtendedAgentCard"
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	ctx, rec := withRecord(ctx)
	rec.mu.Lock()
	rec.keepBody = true
	rec.mu.Unlock()
	card, err := c.sdk.GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
	rec.mu.Lock()
	raw := rec.body
	rec.mu.Unlock()
	if raw != nil {
		if c.iface.Binding == string(a2a.TransportProtocolJSONRPC) {
			var env struct {
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal(raw, &env) == nil && len(bytes.TrimSpace(env.Result)) > 0 && !bytes.Equal(bytes.TrimSpace(env.Result), []byte("null")) {
				raw = env.Result
			} else {
				raw = nil
			}
		}
	}
	switch {
	case raw != nil:
	case err != nil:
		return nil, classify(op, err, rec)
	case card == nil:
		return nil, &CallError{Category: contracts.CategoryProtocol, Op: op, Err: fmt.Errorf("the agent answered without a card")}
	default:
		if raw, err = json.Marshal(card); err != nil {
			return nil, &CallError{Category: contracts.CategoryProtocol, Op: op, Err: err}
		}
	}
	if len(raw) > MaxExtendedCardBytes {
		return nil, &CallError{Category: contracts.CategoryProtocol, Op: op, Err: fmt.Errorf("%w: the extended card is %d bytes, over %d", ErrResponseTooLarge, len(raw), MaxExtendedCardBytes)}
	}
	return raw, nil
}
