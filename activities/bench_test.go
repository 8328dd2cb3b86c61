package activities

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

// instantAgent is the claims agent in this process, answering at once.
func instantAgent(b *testing.B) string {
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = claimsagent.New(claimsagent.Config{BaseURL: "http://" + srv.Listener.Addr().String()})
	srv.Start()
	b.Cleanup(srv.Close)
	return srv.URL
}

var instantMessage = contracts.OutboundMessage{Text: "order A-1 lost", Data: []byte(`{"order_id":"A-1","scenario":"instant"}`)}

// The parts of CheckAndSend against the claims agent's instant scenario,
// beside the raw exchange (a2aclient: SendMessage, then GetTask until the
// task is done, as delegate bench's raw does): what a send costs delegate
// beyond the protocol's exchange. go test -run '^$' -bench CheckAndSend
// ./activities
func BenchmarkCheckAndSend(b *testing.B) {
	base := instantAgent(b)
	a := &Activities{Logger: quiet}
	ctx := context.Background()
	card, err := a.ResolveCard(ctx, contracts.ResolveCardInput{CardURL: base, Skill: claimsagent.SkillID})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("ResolveCard", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.ResolveCard(ctx, contracts.ResolveCardInput{CardURL: base, Skill: claimsagent.SkillID}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CheckAuthorization", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.CheckAuthorization(ctx, contracts.AuthorizationInput{AgentOrigin: card.Interface.CardOrigin, Skill: claimsagent.SkillID}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, stream := range []bool{false, true} {
		name := "SendMessage"
		if stream {
			name = "SendStreamingMessage"
		}
		b.Run(name, func(b *testing.B) {
			env := activityEnv(&testing.T{}, a)
			for b.Loop() {
				msg := instantMessage
				msg.MessageID = time.Now().Format(time.RFC3339Nano)
				v, err := env.ExecuteActivity(a.SendMessage, contracts.SendInput{Interface: card.Interface, Message: msg, Stream: stream})
				if err != nil {
					b.Fatal(err)
				}
				var snap contracts.TaskSnapshot
				if err := v.Get(&snap); err != nil || snap.State != contracts.TaskStateCompleted {
					b.Fatalf("%+v %v", snap, err)
				}
			}
		})
	}
	b.Run("raw", func(b *testing.B) {
		parsed, err := (&cards.Fetcher{}).Fetch(ctx, base)
		if err != nil {
			b.Fatal(err)
		}
		iface, err := cards.SelectInterface(parsed.Parsed, nil)
		if err != nil {
			b.Fatal(err)
		}
		c, err := a2aclient.Dial(ctx, iface, a2aclient.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		for b.Loop() {
			msg := instantMessage
			msg.MessageID = time.Now().Format(time.RFC3339Nano)
			snap, err := c.SendMessage(ctx, msg)
			for wait := SettleFirstRead; err == nil && !snap.State.Terminal(); wait *= 2 {
				time.Sleep(wait)
				snap, err = c.GetTask(ctx, snap.TaskID, snap.ContextID)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
