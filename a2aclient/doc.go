// Package a2aclient dials a remote A2A agent through the interface selected
// from its (verified) Agent Card and makes the calls a delegation needs:
// SendMessage and SendStreaming (SendStreamingMessage, which returns at the
// stream's first event), GetTask, SubscribeStates (SubscribeToTask),
// CancelTask, FindTaskByMessage (ListTasks, for a send whose outcome is
// unknown), CreatePushConfig and GetExtendedAgentCard.
//
// It is a thin layer over github.com/a2aproject/a2a-go/v2/a2aclient, with
// three bindings: the 1.0 JSON-RPC and HTTP+JSON transports (and the 0.3
// ones from a2acompat/a2av0), and the gRPC transports (a2agrpc/v1
// for A2A 1.0 §10, a2agrpc/v0 for 0.3) over a connection made here: TLS unless the
// target is loopback (Options.TLSConfig, else the system roots), through
// Options.GRPCDialer (the activities give it the HTTP guard's), every
// message read bounded by Options.MaxResponseBytes. The SDK sends the
// negotiated version as the A2A-Version service parameter on every call
// (A2A 1.0 §3.6.1): a header over HTTP, "a2a-version" metadata over gRPC
// (§10.2), as it does the credential ("authorization"). On top it records,
// per call, whether the request was written and which HTTP status or gRPC
// status came back (one seam per transport family), so
// that errors can be classified into the categories of contracts; the
// secrets the client sends are redacted from what comes back, gRPC status
// messages included. Replies are read exactly: numbers in data parts and
// metadata keep the agent's text, and members a delegation does not need
// are tolerated, not fatal (TaskSnapshot.Warnings).
//
// Agent authentication comes from the worker's credential store
// (LoadCredentials: Credentials per agent origin, and Refs an operator
// names to answer AUTH_REQUIRED, each bound to the origins it may be sent
// to): static bearer tokens and API keys, OAuth 2.0 client credentials and
// OpenID Connect (tokens minted, cached and refreshed here), and mTLS
// client certificates (Options.WithCredential).
//
//	c, err := a2aclient.Dial(ctx, iface, a2aclient.Options{}) // iface: cards.SelectInterface
//	if err != nil { ... }
//	defer c.Close()
//	snap, err := c.SendMessage(ctx, contracts.OutboundMessage{MessageID: id, Text: "lost parcel A-1001"})
//	// err is a *CallError with a contracts.Category; snap.State a contracts.TaskState
package a2aclient
