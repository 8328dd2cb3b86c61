//go:build rollingnext

package contracts

// The rollingnext build is "release N+1" of the rolling-deploy test
// (e2e/rolling_test.go): today's code with one field added to State and
// one to Carry, each optional (omitempty), as docs/versioning.md ("Data")
// says a field is added. Workers of both builds take turns on one
// delegation across continue-as-new.
type (
	stateNext struct {
		// RollingNext lists the runs of this delegation that handed over
		// on rollingnext code (workflows.rollingNextHandOver).
		RollingNext []string `json:"rolling_next,omitempty"`
	}
	carryNext struct {
		// RollingNext is the run that handed this carry over, set when it
		// ran rollingnext code.
		RollingNext string `json:"rolling_next,omitempty"`
	}
)

// rollingNext reports whether this is the rollingnext build (the golden
// test expects the added fields to be missing from its files there).
const rollingNext = true
