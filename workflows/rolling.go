//go:build !rollingnext

package workflows

import "github.com/a2adelegate/delegate/contracts"

// rollingNextHandOver does nothing: the rollingnext build (rolling_next.go),
// "release N+1" of the rolling-deploy test (e2e/rolling_test.go), writes
// the fields it adds to contracts.State and contracts.Carry here.
func rollingNextHandOver(*contracts.Carry) {}
