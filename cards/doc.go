// Package cards fetches, parses and digests A2A Agent Cards and selects the
// interface a delegation will use.
//
// Fetch (A2A 1.0 §8.2) reads the card over HTTP with a size limit and
// timeouts, and keeps it in a cache (revalidated: Card.FromCache); Parse
// accepts the 1.0 format and the 0.3 format (through a2a-go/v2
// a2acompat/a2av0), with either JSON form of the security requirements
// (the proto form {"schemes": {N: {"list": [...]}}} and the map form); Digest is "sha256:" + hex of the RFC 8785 canonical form
// (gowebpki/jcs) of the card as received, without "signatures" (A2A 1.0
// §8.4.1); SelectInterface picks the newest protocol version this client
// speaks, then the preferred of its three bindings: JSON-RPC, HTTP+JSON,
// gRPC (A2A 1.0 §8.3, §5.2). A gRPC interface's url is read as a
// GRPCTarget (host:port, dns:///host:port, grpc(s)://, http(s)://) and
// the guard checks its URL form (GRPCTarget.URL); InterfaceOrigin is the
// origin credentials and trust entries are looked up by. Schemes
// describes a card's security schemes and requirements; Extended reads the
// authenticated extended card (A2A 1.0 §3.1.11) as Fetch reads the public
// one.
//
// Signature checks (Verify, A2A 1.0 §8.4; VerifyJWT for signed push
// notifications), signing (Sign, for `delegate card sign`), the trust
// store and the HTTP guard against internal addresses are in this package
// too; Fetch applies them:
//
//	f := &cards.Fetcher{Trust: trust} // trust: *cards.TrustStore, nil for none
//	card, err := f.Fetch(ctx, "https://agent.example/.well-known/agent-card.json")
//	if err != nil { ... } // a *cards.Error says what was wrong (Kind)
//	iface, err := cards.SelectInterface(card.Parsed, func(u string) error { return f.Guard().CheckInterface(u, card.Origin) })
package cards
