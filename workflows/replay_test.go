package workflows

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/a2adelegate/delegate/codec"
)

// TestReplayRecordedHistories replays every history recorded under
// testdata/histories (make record-histories) with today's workflow code:
// a change to the commands the workflow issues that is not behind
// workflow.GetVersion fails here with a nondeterminism error. Each folder
// holds the histories recorded by one version of the code, named for it
// (HistoryFolder: baseline, <change-id>-v<N>); a folder is never
// re-recorded, and goes when its version is retired (docs/versioning.md,
// versions_test.go).
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recorded histories under testdata/histories")
	}
	logger := sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, filepath.Join("testdata", "histories")+string(os.PathSeparator)), ".json")
		t.Run(name, func(t *testing.T) {
			var o Options
			if strings.Contains(name, "continue-as-new") {
				// Recorded with the threshold lowered to 1 event, so that
				// the chain continues as new at its first chance.
				o.ContinueAsNewEvents = 1
			}
			var ro worker.WorkflowReplayerOptions
			var dc converter.DataConverter
			if strings.HasPrefix(filepath.Base(name), "encrypted") {
				// Sealed with the test keys (package codec).
				keys, err := codec.LoadKeys(filepath.Join("testdata", "encryption-test-keys.txt"))
				if err != nil {
					t.Fatal(err)
				}
				ro.DataConverter, ro.FailureConverter = keys.DataConverter(), keys.FailureConverter()
				dc = ro.DataConverter
			}
			r, err := worker.NewWorkflowReplayerWithOptions(ro)
			if err != nil {
				t.Fatal(err)
			}
			RegisterWorkflows(r, o)
			if err := replayFile(t, r, logger, f, dc); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}
