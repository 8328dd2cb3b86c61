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
	"os"
	"text/tabwriter"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/spf13/cobra"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

func newCardCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "card",
		Short: "Fetch, verify and sign Agent Cards (A2A 1.0 §8.4)",
	}
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

func newCardFetchCmd() *cobra.Command {
	var trustPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "fetch URL [--trust FILE] [--json]",
		Short: "Fetch a card through the HTTP guard, verify it, and show the interface that would be selected",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, err := loadTrust(trustPath)
			if err != nil {
				return err
			}
			f := &cards.Fetcher{Trust: ts}
			card, err := f.Fetch(cmd.Context(), args[0])
			if err != nil {
				return temporalErr(err)
			}
			g := f.Guard()
			iface, ierr := cards.SelectInterface(card.Parsed, func(u string) error { return g.CheckInterface(u, card.Origin) })
			out := struct {
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
			}{URL: card.URL, Name: card.Parsed.Name, Version: card.Parsed.Version, Digest: card.Digest,
				Signature: card.Verification.Label(), Verification: card.Verification,
				SignatureRequired: f.RequireSignature(card.Origin), Streaming: card.Parsed.Capabilities.Streaming, Skills: []string{}}
			for _, s := range card.Parsed.Skills {
				out.Skills = append(out.Skills, s.ID)
			}
			if ierr != nil {
				out.InterfaceError = ierr.Error()
			} else {
				out.Interface = &iface
			}
			w := cmd.OutOrStdout()
			if asJSON {
				printJSON(w, out)
			} else {
				tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
				fmt.Fprintf(tw, "card:\t%s\n", out.URL)
				fmt.Fprintf(tw, "name:\t%s\n", clean(out.Name))
				fmt.Fprintf(tw, "version:\t%s\n", clean(out.Version))
				fmt.Fprintf(tw, "digest:\t%s\n", out.Digest)
				fmt.Fprintf(tw, "signature:\t%s%s\n", out.Signature, reasonSuffix(clean(out.Verification.Reason)))
				fmt.Fprintf(tw, "signature required:\t%v\n", out.SignatureRequired)
				if out.Interface != nil {
					fmt.Fprintf(tw, "interface:\tA2A %s over %s at %s\n", iface.Version, iface.Binding, clean(iface.URL))
				} else {
					fmt.Fprintf(tw, "interface:\tnone: %s\n", clean(out.InterfaceError))
				}
				fmt.Fprintf(tw, "skills:\t%s\n", clean(fmt.Sprint(out.Skills)))
				fmt.Fprintf(tw, "streaming:\t%v\n", out.Streaming)
				_ = tw.Flush()
			}
			if out.SignatureRequired && card.Verification.Status != contracts.SigVerified {
				return &exitError{code: exitNotComplete, err: errors.New("the trust store requires a verified signature for this origin")}
			}
			if ierr != nil {
				return &exitError{code: exitNotComplete, err: errors.New("no interface of this card can be used")}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&trustPath, "trust", os.Getenv("DELEGATE_TRUST"), "trust store file (env DELEGATE_TRUST)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
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
