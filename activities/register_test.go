package activities

import (
	"slices"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/a2adelegate/delegate/contracts"
)

// Every name the workflows schedule has its method, and no method is
// registered under a name the workflows do not know.
func TestRegisterCoversTheContractsNames(t *testing.T) {
	fns := activityFuncs(&Activities{})
	for _, name := range contracts.ActivityNames {
		if fns[name] == nil {
			t.Errorf("contracts.%s has no method in activityFuncs", name)
		}
	}
	for name := range fns {
		if !slices.Contains(contracts.ActivityNames, name) {
			t.Errorf("activityFuncs registers %q, which is not in contracts.ActivityNames", name)
		}
	}
	// Registering on a test environment makes each name schedulable.
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	Register(env, &Activities{})
	for _, name := range contracts.ActivityNames {
		env.OnActivity(name, nil, nil).Maybe() // panics when name is not registered
	}
}
