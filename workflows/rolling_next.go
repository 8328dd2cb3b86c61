//go:build rollingnext

package workflows

import "github.com/a2adelegate/delegate/contracts"

// rollingNextHandOver is what "release N+1" of the rolling-deploy test
// (e2e/rolling_test.go) adds: a run that hands over records itself in the
// State's new field (kept by every later run of this build, dropped by a
// run of the release before, which does not know the field) and in the
// Carry's.
func rollingNextHandOver(c *contracts.Carry) {
	c.State.RollingNext = append(c.State.RollingNext, c.FromRunID)
	c.RollingNext = c.FromRunID
}
