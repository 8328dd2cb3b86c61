package e2e

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/workflows"
)

// childWorkerEnv, when set to a frontend address, makes the test binary a
// worker process (for the test that kills a worker).
const childWorkerEnv = "DELEGATE_E2E_CHILD_WORKER"

func TestMain(m *testing.M) {
	if addr := os.Getenv(childWorkerEnv); addr != "" {
		runChildWorker(addr)
		return
	}
	os.Exit(m.Run())
}

func runChildWorker(addr string) {
	quiet := slog.New(slog.DiscardHandler)
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: "default", Logger: sdklog.NewStructuredLogger(quiet)})
	if err != nil {
		os.Exit(3)
	}
	w := worker.New(c, contracts.TaskQueue, worker.Options{})
	workflows.RegisterWorkflows(w, workflows.Options{})
	activities.Register(w, &activities.Activities{PollInitial: 50 * time.Millisecond, PollMax: 500 * time.Millisecond, Logger: quiet})
	_ = w.Run(worker.InterruptCh())
	os.Exit(0)
}
