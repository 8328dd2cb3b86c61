// Package deploy holds the Docker Compose description of a deployment
// (lost-parcel.compose.json: Temporal on PostgreSQL, the worker, the
// claims agent) and the test that checks it against the code (the
// commands, flags, ports and files it names).
package deploy
