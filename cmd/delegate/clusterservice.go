//go:build !worker

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/a2adelegate/delegate/internal/devserver"
)

// newClusterServiceCmd is the hidden `delegate cluster-service --config
// FILE`: one Temporal service (frontend, history, matching or worker) of a
// cluster of separate processes, as `make test-cluster` runs it
// (devserver.ClusterService is the file's shape). It serves until SIGTERM
// or SIGINT.
func newClusterServiceCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:    "cluster-service --config FILE",
		Short:  "Run one Temporal service of a test cluster (make test-cluster)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageErr(errors.New("--config is required"))
			}
			b, err := os.ReadFile(file)
			if err != nil {
				return usageErr(err)
			}
			var cs devserver.ClusterService
			if err := json.Unmarshal(b, &cs); err != nil {
				return usageErr(fmt.Errorf("--config %s: %w", file, err))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return devserver.RunClusterService(ctx, cs)
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "JSON file: the service, its ports, the store, the shard count")
	return cmd
}
