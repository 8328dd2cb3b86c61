// Package deploy holds the deployment files' checks, run by `make test`
// without a Docker engine or a Kubernetes cluster: docker-compose.yml is
// loaded with compose-spec/compose-go and its versions, search attributes,
// server config, schema set-up, variables and commands are held to the
// code's; the Dockerfile and the worker build (`go build -tags worker`,
// which must link no Temporal server, UI or bench) are checked; the
// Kubernetes manifests of deploy/k8s and the Helm values for Temporal's
// chart are read and held to the same names. With `make test-postgres`,
// the Temporal part of the compose file runs on a real PostgreSQL.
package deploy
