//go:build worker

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// The worker build (go build -tags worker ./cmd/delegate) leaves out the
// embedded Temporal server, the Temporal UI and the bench: `dev` and
// `bench` are hidden there and say so when run.

func newDevCmd(*clientFlags) *cobra.Command { return notInWorkerBuild("dev") }
func newBenchCmd() *cobra.Command           { return notInWorkerBuild("bench") }
func newClusterServiceCmd() *cobra.Command  { return notInWorkerBuild("cluster-service") }

func notInWorkerBuild(name string) *cobra.Command {
	return &cobra.Command{
		Use:                name,
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return usageErr(errors.New("delegate " + name + " is not in this build: the worker build (go build -tags worker) leaves out the embedded Temporal server, the UI and the bench; use the full delegate binary"))
		},
	}
}
