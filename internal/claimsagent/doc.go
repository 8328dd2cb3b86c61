// Package claimsagent is a small but real A2A 1.0 agent (a2a-go/v2 a2asrv)
// that opens claims for lost parcels. It is the remote side of the demo
// (`make run`) and of the end-to-end tests.
//
// It serves the Agent Card at /.well-known/agent-card.json (A2A 1.0 §8.2)
// with supportedInterfaces JSON-RPC at /a2a/jsonrpc and HTTP+JSON at
// /a2a/rest (A2A 1.0), and JSON-RPC at /a2a/v0.3/jsonrpc and HTTP+JSON at
// /a2a/v0.3/rest (A2A 0.3); skill "open-claim", capabilities.streaming and
// pushNotifications true. With Config.GRPCURL the card lists a gRPC
// interface too (A2A 1.0 §10), served by ServeGRPC.
//
// Scenario "lost-parcel" (the default): the first message gives a Task that
// goes WORKING, then INPUT_REQUIRED with a status message asking for a photo
// of the box. A follow-up with the same taskId and contextId completes it with
// one artifact named "claim_opened" whose data part is
// {"claim_id": "CLM-...", "order_id": "..."}; the order id comes from the
// request's data part ("order_id") or its text ("order A-1001").
//
// Other scenarios, chosen by the data field "scenario" of the first message,
// let every fault in docs/operations.md be tried (see Scenarios and
// docs/claims-agent.md): "instant" (completes at once), "fail" (FAILED with a
// reason), "wrong-kind" (completes with an artifact named "refund_issued"),
// "slow" (stays WORKING until canceled), "stubborn" (refuses to be canceled
// with TaskNotCancelable and completes after Config.StubbornDelay), "mixed" (completes with one valid
// claim_opened and seven artifacts that each break one contract rule; see
// MixedArtifacts), "auth" (AUTH_REQUIRED until a follow-up carries the
// bearer token Config.AuthToken), "hang" (like "instant", but the answer to
// the first delivery of its message is held Config.HangDelay), "think"
// (works inside the send, ignoring returnImmediately, and completes after
// Config.ThinkDelay; no deduplication).
//
// A follow-up whose taskId is unknown is refused with TaskNotFoundError, one
// whose contextId does not match the task with InvalidParams (A2A 1.0
// §3.4.2, §3.4.3); a repeated messageId does not create a second task (A2A
// 1.0 §3.3.1): the agent answers with the task the first one created
// (except in scenario "think", which makes one per delivery).
package claimsagent
