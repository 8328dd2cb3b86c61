package contracts

import "time"

// ReconcileInput is the input of the ReconcileDelegations workflow (a
// reconcile Schedule runs it): which open delegations to send the Signal
// "reconcile".
type ReconcileInput struct {
	Namespace string `json:"namespace"`
	// OlderThan keeps delegations started more than this long ago (0: all).
	OlderThan time.Duration `json:"older_than,omitempty"`
	// State keeps delegations whose search attribute A2AState is State (a
	// current or former spelling, see FormerA2AStates).
	State string `json:"state,omitempty"`
}
