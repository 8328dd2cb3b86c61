// Package deploy holds the deployment files' checks: docker-compose.yml is
// validated with compose-spec/compose-go (no Docker engine is needed).
package deploy
