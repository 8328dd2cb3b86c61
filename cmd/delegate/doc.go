// Command delegate is the CLI of delegate: it runs the development server
// and the worker, and starts, inspects, answers, cancels and lists
// delegations on a Temporal server.
package main
