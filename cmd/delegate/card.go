package main

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/spf13/cobra"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

func newCardCmd() *cobra.Command {
	var f cardFlags
	cmd := &cobra.Command{
		Use:   "card [URL]",
		Short: "Fetch, verify and sign Agent Cards (A2A 1.0 §8.4); card URL is card fetch URL",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return runCardFetch(cmd, args[0], f)
		},
	}
	f.register(cmd)
	cmd.AddCommand(newCardFetchCmd(), newCardSignCmd(), newCardKeygenCmd())
	return cmd
}

// loadTrust reads the trust store named by --trust or DELEGATE_TRUST; ""
// means none.
func loadTrust(path string) (*cards.TrustStore, error) {
	if path == "" {
		return nil, nil
	}
	ts, err := cards.LoadTrustStore(path)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--trust: %w", err))
	}
	return ts, nil
}

// cardFlags are the flags of card fetch (and of card URL).
type cardFlags struct {
	trust, credentials string
	asJSON             bool
}

func (f *cardFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.trust, "trust", os.Getenv("DELEGATE_TRUST"), "trust store file (env DELEGATE_TRUST)")
	cmd.Flags().StringVar(&f.credentials, "credentials", os.Getenv("DELEGATE_CREDENTIALS"), "the worker's credential store: says which scheme has credentials, and fetches the extended card with them (env DELEGATE_CREDENTIALS)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print JSON")
}

func newCardFetchCmd() *cobra.Command {
	var f cardFlags
	cmd := &cobra.Command{
		Use:   "fetch URL [--trust FILE] [--credentials FILE] [--json]",
		Short: "Fetch a card through the HTTP guard, verify it, and show the interface, the security scheme and the extended card that would be used",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCardFetch(cmd, args[0], f)
		},
	}
	f.register(cmd)
	return cmd
}

// cardReport is what card fetch prints (--json: as is).
type cardReport struct {
	URL               string                     `json:"url"`
	Name              string                     `json:"name"`
	Version           string                     `json:"version"`
	Digest            string                     `json:"digest"`
	Signature         string                     `json:"signature"`
	Verification      contracts.CardVerification `json:"verification"`
	SignatureRequired bool                       `json:"signature_required"`
	Interface         *contracts.Interface       `json:"interface,omitempty"`
	InterfaceError    string                     `json:"interface_error,omitempty"`
	Skills            []string                   `json:"skills"`
	Streaming         bool                       `json:"streaming"`
	// SecuritySchemes are the card's schemes; Scheme the one delegate
	// would use (nil: none it can use, or none declared); Credentials
	// whether the credential store holds credentials for the interface's
	// origin (false without --credentials).
	SecuritySchemes []cards.SchemeInfo    `json:"security_schemes"`
	Scheme          *contracts.AuthScheme `json:"scheme,omitempty"`
	Credentials     bool                  `json:"credentials"`
	// CredentialOrigin is the origin the credential store is looked up
	// by: the selected interface's (for a gRPC interface, its target's
	// URL form), not always the card's.
	CredentialOrigin string `json:"credential_origin,omitempty"`
	// ExtendedCard is the authenticated extended card (A2A 1.0 §3.1.11)
	// when the card declares one; ExtendedCardError why it was not read.
	ExtendedCardDeclared bool            `json:"extended_card_declared"`
	ExtendedCard         *extendedReport `json:"extended_card,omitempty"`
	ExtendedCardError    string          `json:"extended_card_error,omitempty"`
}

type extendedReport struct {
	Digest         string               `json:"digest"`
	Signature      string               `json:"signature"`
	Skills         []string             `json:"skills"`
	Interface      *contracts.Interface `json:"interface,omitempty"`
	InterfaceError string               `json:"interface_error,omitempty"`
}

func runCardFetch(cmd *cobra.Command, cardURL string, fl cardFlags) error {
	ts, err := loadTrust(fl.trust)
	if err != nil {
		return err
	}
	var creds *a2aclient.Credentials
	if fl.credentials != "" {
		if creds, err = a2aclient.LoadCredentials(fl.credentials); err != nil {
			return usageErr(fmt.Errorf("--credentials: %w", err))
		}
	}
	f := &cards.Fetcher{Trust: ts}
	card, err := f.Fetch(cmd.Context(), cardURL)
	if err != nil {
		return temporalErr(err)
	}
	g := f.Guard()
	iface, ierr := cards.SelectInterface(card.Parsed, func(u string) error { return g.CheckInterface(u, card.Origin) })
	out := cardReport{URL: card.URL, Name: card.Parsed.Name, Version: card.Parsed.Version, Digest: card.Digest,
		Signature: card.Verification.Label(), Verification: card.Verification,
		SignatureRequired: f.RequireSignature(card.Origin), Streaming: card.Parsed.Capabilities.Streaming, Skills: skillIDs(card),
		SecuritySchemes: cards.Schemes(card.Parsed), Scheme: cards.SchemeOf(card.Parsed, nil),
		ExtendedCardDeclared: card.Parsed.Capabilities.ExtendedAgentCard}
	if ierr != nil {
		out.InterfaceError = ierr.Error()
	} else {
		out.Interface = &iface
		if origin, err := cards.InterfaceOrigin(iface); err == nil {
			_, out.Credentials = creds.ForOrigin(origin)
			out.CredentialOrigin = origin
			out.Scheme = cards.SchemeOf(card.Parsed, func(kind string) bool { return creds.Satisfies(origin, kind) })
		}
	}
	if out.ExtendedCardDeclared {
		a := &activities.Activities{Fetcher: f, Credentials: creds, Logger: slog.New(slog.DiscardHandler)}
		ext, err := a.ExtendedCard(cmd.Context(), card)
		if err != nil {
			out.ExtendedCardError = err.Error()
		} else {
			er := &extendedReport{Digest: ext.Digest, Signature: ext.Verification.Label(), Skills: skillIDs(ext)}
			if ei, err := cards.SelectInterface(ext.Parsed, func(u string) error { return g.CheckInterface(u, card.Origin) }); err != nil {
				er.InterfaceError = err.Error()
			} else {
				er.Interface = &ei
			}
			out.ExtendedCard = er
		}
	}
	w := cmd.OutOrStdout()
	if fl.asJSON {
		printJSON(w, out)
	} else {
		printCardReport(w, out)
	}
	if out.SignatureRequired && card.Verification.Status != contracts.SigVerified {
		return &exitError{code: exitNotComplete, err: errors.New("the trust store requires a verified signature for this origin")}
	}
	if ierr != nil {
		return &exitError{code: exitNotComplete, err: errors.New("no interface of this card can be used")}
	}
	return nil
}

func skillIDs(c *cards.Card) []string {
	out := []string{}
	for _, s := range c.Parsed.Skills {
		out = append(out, s.ID)
	}
	return out
}

func printCardReport(w io.Writer, out cardReport) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintf(tw, "card:\t%s\n", out.URL)
	fmt.Fprintf(tw, "name:\t%s\n", clean(out.Name))
	fmt.Fprintf(tw, "version:\t%s\n", clean(out.Version))
	fmt.Fprintf(tw, "digest:\t%s\n", out.Digest)
	fmt.Fprintf(tw, "signature:\t%s%s\n", out.Signature, reasonSuffix(clean(out.Verification.Reason)))
	fmt.Fprintf(tw, "signature required:\t%v\n", out.SignatureRequired)
	if out.Interface != nil {
		fmt.Fprintf(tw, "interface:\tA2A %s over %s at %s%s\n", out.Interface.Version, out.Interface.Binding, clean(out.Interface.URL), declared(out.Interface.DeclaredVersion))
	} else {
		fmt.Fprintf(tw, "interface:\tnone: %s\n", clean(out.InterfaceError))
	}
	fmt.Fprintf(tw, "skills:\t%s\n", clean(fmt.Sprint(out.Skills)))
	fmt.Fprintf(tw, "streaming:\t%v\n", out.Streaming)
	if len(out.SecuritySchemes) == 0 {
		fmt.Fprintf(tw, "security:\tnone declared\n")
	}
	for _, s := range out.SecuritySchemes {
		req := "declared"
		if s.Required {
			req = "required"
			if len(s.Scopes) > 0 {
				req += fmt.Sprintf(", scopes %v", s.Scopes)
			}
		}
		fmt.Fprintf(tw, "security:\t%s (%s, %s): %s\n", clean(s.Name), s.Type, req, clean(s.Detail))
	}
	switch {
	case out.Scheme != nil:
		fmt.Fprintf(tw, "scheme used:\t%s\n", clean(describeScheme(out.Scheme)))
	case len(out.SecuritySchemes) > 0:
		fmt.Fprintf(tw, "scheme used:\tnone of these\n")
	}
	switch {
	case out.Credentials:
		fmt.Fprintf(tw, "credentials:\theld for %s (the interface's origin)\n", out.CredentialOrigin)
	case len(out.SecuritySchemes) > 0 && out.CredentialOrigin != "":
		fmt.Fprintf(tw, "credentials:\tnone for %s (the interface's origin): add origins[%q] to the credential store\n", out.CredentialOrigin, out.CredentialOrigin)
	}
	switch {
	case out.ExtendedCard != nil:
		e := out.ExtendedCard
		fmt.Fprintf(tw, "extended card:\t%s, signature %s\n", e.Digest, e.Signature)
		fmt.Fprintf(tw, "extended skills:\t%s\n", clean(fmt.Sprint(e.Skills)))
		if e.Interface != nil {
			fmt.Fprintf(tw, "extended interface:\tA2A %s over %s at %s\n", e.Interface.Version, e.Interface.Binding, clean(e.Interface.URL))
		} else {
			fmt.Fprintf(tw, "extended interface:\tnone: %s\n", clean(e.InterfaceError))
		}
	case out.ExtendedCardDeclared:
		fmt.Fprintf(tw, "extended card:\tdeclared, not read: %s\n", clean(out.ExtendedCardError))
	}
	_ = tw.Flush()
}

// describeScheme is a scheme in words, without a secret.
func describeScheme(s *contracts.AuthScheme) string {
	var d string
	switch s.Kind {
	case "api_key":
		switch s.In {
		case "query", "cookie":
			d = fmt.Sprintf("API key in %s %q", s.In, s.Param)
		default:
			d = "API key in header " + s.Header
		}
	case "bearer":
		d = "bearer token in the Authorization header"
	case "oauth2":
		d = "OAuth 2.0 client credentials (RFC 6749 §4.4), the card's tokenUrl " + s.TokenURL
	case "oidc":
		d = "OpenID Connect client credentials, the card's issuer " + s.OpenIDConnectURL
	case "mtls":
		d = "a client certificate (mTLS)"
	default:
		d = s.Kind
	}
	if s.Name != "" {
		d = s.Name + ": " + d
	}
	if len(s.Scopes) > 0 {
		d += fmt.Sprintf(", scopes %v", s.Scopes)
	}
	if s.WithMTLS {
		d += ", with a client certificate"
	}
	return d
}

func newCardSignCmd() *cobra.Command {
	var keyPath, kid, jku, in, out string
	cmd := &cobra.Command{
		Use:   "sign --key JWK_FILE --kid K [--jku URL] --in card.json [--out FILE]",
		Short: "Append a signature to an Agent Card (JWS over its RFC 8785 form, A2A 1.0 §8.4.2)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if keyPath == "" || kid == "" || in == "" {
				return usageErr(errors.New("--key, --kid and --in are required"))
			}
			key, err := cards.LoadSigningKey(keyPath)
			if err != nil {
				return usageErr(fmt.Errorf("--key: %w", err))
			}
			body, err := readFileOrStdin(cmd.Context(), in)
			if err != nil {
				return usageErr(fmt.Errorf("--in: %w", err))
			}
			signed, err := cards.Sign(body, key, kid, jku)
			if err != nil {
				return usageErr(err)
			}
			return writeOut(cmd.OutOrStdout(), out, append(signed, '\n'))
		},
	}
	cmd.Flags().StringVar(&keyPath, "key", "", "private JWK file (EC, OKP or RSA)")
	cmd.Flags().StringVar(&kid, "kid", "", "key id to put in the protected header")
	cmd.Flags().StringVar(&jku, "jku", "", "JWK Set URL to put in the protected header")
	cmd.Flags().StringVar(&in, "in", "", "card JSON file (- for stdin)")
	cmd.Flags().StringVar(&out, "out", "", "write here instead of stdout")
	return cmd
}

func newCardKeygenCmd() *cobra.Command {
	var alg, kid, out string
	cmd := &cobra.Command{
		Use:   "keygen --kid K [--alg ES256|EdDSA|RS256] --out KEY_FILE",
		Short: "Make a signing key: writes the private JWK to --out and prints the public JWK Set for trust stores",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kid == "" || out == "" {
				return usageErr(errors.New("--kid and --out are required"))
			}
			var raw any
			var err error
			switch alg {
			case "ES256":
				raw, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			case "EdDSA":
				_, raw, err = ed25519.GenerateKey(rand.Reader)
			case "RS256":
				raw, err = rsa.GenerateKey(rand.Reader, 2048)
			default:
				return usageErr(fmt.Errorf("--alg %q: ES256, EdDSA or RS256", alg))
			}
			if err != nil {
				return err
			}
			key, err := jwk.FromRaw(raw)
			if err != nil {
				return err
			}
			_ = key.Set(jwk.KeyIDKey, kid)
			_ = key.Set(jwk.AlgorithmKey, jwa.SignatureAlgorithm(alg))
			priv, _ := json.MarshalIndent(key, "", "  ")
			if err := os.WriteFile(out, append(priv, '\n'), 0o600); err != nil {
				return usageErr(fmt.Errorf("--out: %w", err))
			}
			pub, err := jwk.PublicKeyOf(key)
			if err != nil {
				return err
			}
			set := jwk.NewSet()
			_ = set.AddKey(pub)
			printJSON(cmd.OutOrStdout(), set)
			return nil
		},
	}
	cmd.Flags().StringVar(&alg, "alg", "ES256", "ES256, EdDSA or RS256")
	cmd.Flags().StringVar(&kid, "kid", "", "key id")
	cmd.Flags().StringVar(&out, "out", "", "private key file (written with mode 0600)")
	return cmd
}

func writeOut(stdout io.Writer, path string, b []byte) error {
	if path == "" {
		_, err := stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
