// Package a2aclient dials a remote A2A agent through the interface selected
// from its (verified) Agent Card and makes the calls a delegation needs:
// SendMessage, GetTask, CancelTask.
//
// It is a thin layer over github.com/a2aproject/a2a-go/v2/a2aclient: the 1.0
// JSON-RPC and HTTP+JSON transports, and the 0.3 ones from a2acompat/a2av0.
// The SDK sends the negotiated version as the A2A-Version service parameter
// (header) on every call (A2A 1.0 §3.6.1). On top it records, per call,
// whether the request was written and which HTTP status came back, so that
// errors can be classified (Classify) into the categories of contracts.
//
//	c, err := a2aclient.Dial(ctx, iface, a2aclient.Options{}) // iface: cards.SelectInterface
//	if err != nil { ... }
//	defer c.Close()
//	snap, err := c.SendMessage(ctx, contracts.OutboundMessage{MessageID: id, Text: "lost parcel A-1001"})
//	// err is a *CallError with a contracts.Category; snap.State a contracts.TaskState
package a2aclient
