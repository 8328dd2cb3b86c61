package workflows

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/a2adelegate/delegate/contracts"
)

// The Delegation workflow blocks in one place, wait, which says how the
// deadline bounds each wait: a workflow.Await (or a Selector, a Sleep, an
// AwaitWithTimeout) anywhere else in the package is a wait that could
// escape the deadline, and fails here. The listener's Selector (listen) is
// its own coroutine, not a wait of the delegation's.
func TestOneWaitPrimitive(t *testing.T) {
	allowed := map[string][]string{
		"Await":       {"wait"},
		"NewSelector": {"listen"},
	}
	blocking := []string{"Await", "AwaitWithTimeout", "Sleep", "NewSelector", "AwaitWithOptions", "AwaitWithTimeoutAndOptions"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := map[string]int{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "workflow" || !slices.Contains(blocking, sel.Sel.Name) {
					return true
				}
				seen[sel.Sel.Name]++
				if !slices.Contains(allowed[sel.Sel.Name], fd.Name.Name) {
					t.Errorf("%s: workflow.%s in %s: a delegation blocks only in wait (wait.go), which arms the deadline or names what bounds the wait", fset.Position(call.Pos()), sel.Sel.Name, fd.Name.Name)
				}
				return true
			})
		}
	}
	// The check reads what it means to: the primitive itself was found.
	if seen["Await"] == 0 || seen["NewSelector"] == 0 {
		t.Fatalf("found workflow.Await %d times and workflow.NewSelector %d times: the check no longer reads the package", seen["Await"], seen["NewSelector"])
	}
}

// The waits no other test takes to the deadline end there too, at the
// deadline itself: an unknown outcome no operator resolves, and a task
// followed by push whose push never comes (its hourly read shows it
// working).
func (s *DelegationSuite) TestDeadlineWhileTheOutcomeIsUnknown() {
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(contracts.CheckAndSendResult{}, unknownErr()).Once()
	var during string
	s.env.RegisterDelayedCallback(func() { during = s.state().A2AState }, 30*time.Minute)
	o := s.execute(contract())
	s.Equal(string(contracts.PhaseUnknownOutcome), during)
	s.Equal(contracts.StatusDeadlineExceeded, o.Status)
	s.Equal(contract().Deadline, s.env.Now().UTC(), "the wait for a resolution ended at the deadline")
}

func (s *DelegationSuite) TestDeadlineWhileFollowingByPush() {
	d := s.pushedWork()
	s.env.OnActivity(contracts.ActivityGetTask, mock.Anything, mock.Anything).Return(snap("working"), nil).Maybe()
	s.env.OnActivity(contracts.ActivityCancelTask, mock.Anything, mock.Anything).Return(snap("canceled"), nil).Once()
	d.Deadline = t0.Add(150 * time.Minute)
	o := s.execute(d)
	s.Equal(contracts.StatusDeadlineExceeded, o.Status)
	s.Equal(d.Deadline, s.env.Now().UTC(), "the wait for a push ended at the deadline, not at the next hourly read")
	s.True(s.state().Push)
}
