package workflows

import (
	"reflect"
	"testing"

	"github.com/a2adelegate/delegate/contracts"
)

// TestInboxCarriesWhatItHolds: what the inbox holds at a continue-as-new
// reaches the next run's inbox (the revoke and the reconcile request are
// applied by resume, not restore).
func TestInboxCarriesWhatItHolds(t *testing.T) {
	var b inbox
	b.offerAnswer(contracts.Answer{Text: "yes", AnsweredBy: "ops"}, "update")
	b.offerResolution(contracts.Resolution{Action: contracts.ActionResend})
	b.offerResolution(contracts.Resolution{Action: contracts.ActionAbandon}) // the first stands
	b.acceptRediscover()
	b.offerPush()
	if !b.revoke("stop") || b.revoke("again") {
		t.Fatal("revoke: the first reason stands")
	}
	b.askReconcile()
	var c contracts.Carry
	b.carry(&c)
	if c.Revoked == nil || *c.Revoked != "stop" || !c.Reconcile || c.PendingVia != "update" {
		t.Fatalf("carry = %+v", c)
	}
	var next inbox
	next.restore(&c)
	a, via := next.takeAnswer()
	if a.Text != "yes" || via != "update" || next.hasAnswer() {
		t.Fatalf("answer %+v via %q", a, via)
	}
	if res := next.takeResolution(); res.Action != contracts.ActionResend || next.hasResolution() {
		t.Fatalf("resolution %+v", res)
	}
	if !next.rediscoverAccepted() || !next.hasPush() {
		t.Fatalf("restored %+v", next)
	}
	if _, ok := next.isRevoked(); ok {
		t.Fatal("restore applied the revoke; resume does")
	}
	var empty contracts.Carry
	(&inbox{}).carry(&empty)
	if !reflect.DeepEqual(empty, contracts.Carry{}) {
		t.Fatalf("an empty inbox carries %+v", empty)
	}
	var rc inbox
	if !rc.startReconcile() || rc.startReconcile() {
		t.Fatal("startReconcile: one read at a time")
	}
	var running contracts.Carry
	rc.carry(&running)
	if !running.Reconcile {
		t.Fatal("a running reconcile read is carried as a request")
	}
	rc.endReconcile()
	if !rc.startReconcile() {
		t.Fatal("endReconcile")
	}
}
