//go:build !rollingnext

package contracts

// stateNext and carryNext are empty in every build but the rolling-deploy
// test's "release N+1" (build tag rollingnext, rolling_next.go).
type (
	stateNext struct{}
	carryNext struct{}
)

// rollingNext reports whether this is the rollingnext build (the golden
// test expects the added fields to be missing from its files there).
const rollingNext = false
