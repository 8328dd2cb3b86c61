// Package codec encrypts what delegations put in Temporal: every payload
// (workflow input and result, activity inputs and results, Signal, Update
// and Query payloads, memo, the UI's summary and details) is sealed with
// AES-256-GCM before it leaves the process, so the server's history holds
// ciphertext. It is a Temporal PayloadCodec (go.temporal.io/sdk/converter)
// used by the worker, the CLI and package client alike, and the same
// codec served over HTTP (Temporal's codec server protocol, /encode and
// /decode) lets the Temporal UI show an operator the decoded payloads.
//
// Keys carry ids; the newest (the last one given) encrypts, every one
// decrypts, so a key is rotated by adding a new one at the end and
// removing the old one only once no open delegation still holds payloads
// sealed with it. A payload that is not sealed (written before encryption
// was turned on) is read as it is.
//
//	// package client (github.com/a2adelegate/delegate/client) loads the keys itself:
//	c, err := client.Dial(ctx, client.Connection{EncryptionKeyFile: "keys.txt"}) // or $DELEGATE_ENCRYPTION_KEYS
//	// a Temporal SDK client of your own:
//	keys, err := codec.LoadKeys("keys.txt")
//	opts := sdkclient.Options{DataConverter: keys.DataConverter(), FailureConverter: keys.FailureConverter()}
//
// What stays in clear (search attributes, ids, failure types) is listed
// in docs/trust.md.
package codec
