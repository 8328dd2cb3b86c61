package codec

import (
	"encoding/base64"
	"errors"
	"fmt"
	commonpb "go.temporal.io/api/common/v1"
	"io"
	"os"
	"regexp"
	"strings"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// KeySize is the size of an AES-256 key, in bytes.
const KeySize = 32

// maxKeyFileBytes bounds a key file (a thousand keys fit).
const maxKeyFileBytes = 64 << 10

// EnvKeys is the environment variable that holds keys in the text form
// ParseKeys reads (it keeps them out of the process list and off disk).
const EnvKeys = "DELEGATE_ENCRYPTION_KEYS"

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Key is one AES-256 key and its id. The id is stored beside every
// payload it seals; the secret never leaves the process.
type Key struct {
	ID     string
	secret []byte
}

// Keys is an ordered key ring: the last key encrypts, every key decrypts.
type Keys struct {
	keys []Key
	byID map[string][]byte
}

// NewKey returns a Key. Errors: an id that is not 1 to 64 of
// [A-Za-z0-9._-], a secret that is not KeySize bytes.
func NewKey(id string, secret []byte) (Key, error) {
	if !keyIDPattern.MatchString(id) {
		return Key{}, fmt.Errorf("key id %q: 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', '-'", id)
	}
	if len(secret) != KeySize {
		return Key{}, fmt.Errorf("key %q: %d bytes, an AES-256 key is %d", id, len(secret), KeySize)
	}
	return Key{ID: id, secret: append([]byte(nil), secret...)}, nil
}

// NewKeys returns a key ring of keys, the last one encrypting. Errors: no
// key, or two with one id.
func NewKeys(keys ...Key) (*Keys, error) {
	if len(keys) == 0 {
		return nil, errors.New("no encryption key")
	}
	k := &Keys{byID: map[string][]byte{}}
	for _, key := range keys {
		if _, dup := k.byID[key.ID]; dup {
			return nil, fmt.Errorf("key id %q given twice", key.ID)
		}
		k.byID[key.ID] = key.secret
		k.keys = append(k.keys, key)
	}
	return k, nil
}

// ParseKeys reads keys written as "ID:BASE64" entries (the base64 of 32
// random bytes, standard or URL alphabet, padded or not), separated by
// newlines or commas; blank lines and lines starting with "#" are
// skipped. The last entry encrypts. Errors name the entry by its number
// and the rule it breaks, never its secret.
func ParseKeys(text string) (*Keys, error) {
	var keys []Key
	n := 0
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, entry := range strings.Split(line, ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			n++
			id, b64, ok := strings.Cut(entry, ":")
			if !ok {
				return nil, fmt.Errorf("key %d: want ID:BASE64", n)
			}
			// Entries are named by their number, never by their text: a
			// line written the wrong way round would show its secret.
			id = strings.TrimSpace(id)
			if !keyIDPattern.MatchString(id) {
				return nil, fmt.Errorf("key %d: the id (before the colon) must be 1 to 64 of A-Z, a-z, 0-9, '.', '_', '-'", n)
			}
			secret, err := DecodeBase64(strings.TrimSpace(b64))
			if err != nil {
				return nil, fmt.Errorf("key %d: the secret (after the colon) is not base64", n)
			}
			if len(secret) != KeySize {
				return nil, fmt.Errorf("key %d: the secret is %d bytes, an AES-256 key is %d", n, len(secret), KeySize)
			}
			for _, k := range keys {
				if k.ID == id {
					return nil, fmt.Errorf("key %d: its id is given twice", n)
				}
			}
			key, err := NewKey(id, secret)
			if err != nil {
				return nil, fmt.Errorf("key %d: %w", n, err)
			}
			keys = append(keys, key)
		}
	}
	return NewKeys(keys...)
}

// ReadSecretFile reads a file that holds a secret (a key file), at most
// maxKeyFileBytes: a device or a huge file is refused, not read forever.
func ReadSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFileBytes {
		return nil, fmt.Errorf("%s: over %d bytes", path, maxKeyFileBytes)
	}
	return b, nil
}

// DecodeBase64 decodes a key written in base64, standard or URL alphabet,
// padded or not.
func DecodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// LoadKeys reads keys from a file (ParseKeys). The file should be
// readable by its owner only; errors name the file, never a secret.
func LoadKeys(path string) (*Keys, error) {
	b, err := ReadSecretFile(path)
	if err != nil {
		return nil, fmt.Errorf("encryption key file: %w", err)
	}
	k, err := ParseKeys(string(b))
	if err != nil {
		return nil, fmt.Errorf("encryption key file %s: %w", path, err)
	}
	return k, nil
}

// FromFileOrEnv returns the keys of path when it is set, else those of
// $DELEGATE_ENCRYPTION_KEYS when it is set, else nil (no encryption).
func FromFileOrEnv(path string) (*Keys, error) {
	if path != "" {
		return LoadKeys(path)
	}
	if v := os.Getenv(EnvKeys); strings.TrimSpace(v) != "" {
		k, err := ParseKeys(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKeys, err)
		}
		return k, nil
	}
	return nil, nil
}

// IDs are the key ids, the encrypting one last.
func (k *Keys) IDs() []string {
	ids := make([]string, len(k.keys))
	for i, key := range k.keys {
		ids[i] = key.ID
	}
	return ids
}

// Codec is the PayloadCodec of k (AES-256-GCM; see Codec).
func (k *Keys) Codec() converter.PayloadCodec { return &Codec{keys: k} }

// DataConverter is Temporal's default data converter with k's Codec
// after it: what the worker, the CLI and package client use.
func (k *Keys) DataConverter() converter.DataConverter {
	return rawPassThrough{converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), k.Codec())}
}

// rawPassThrough hands a payload the codec cannot open (a key this ring
// lacks, or altered) to a converter.RawValue as it is, sealed, instead of
// failing: go.temporal.io/sdk drops a Signal whose payload fails to decode
// and waits on for the next one on that channel, so a revoke sealed with a
// key the worker lacks stopped nothing and was recorded nowhere. The
// workflow receives every Signal as a RawValue and refuses a sealed one
// by name (it still revokes). Every other decode is unchanged.
type rawPassThrough struct{ converter.DataConverter }

func (d rawPassThrough) FromPayload(p *commonpb.Payload, v any) error {
	err := d.DataConverter.FromPayload(p, v)
	if rv, ok := v.(*converter.RawValue); ok && err != nil && Sealed(p) {
		*rv = converter.NewRawValue(p)
		return nil
	}
	return err
}

func (d rawPassThrough) FromPayloads(ps *commonpb.Payloads, vs ...any) error {
	err := d.DataConverter.FromPayloads(ps, vs...)
	if err == nil || len(vs) > len(ps.GetPayloads()) {
		return err
	}
	for i, v := range vs {
		if _, ok := v.(*converter.RawValue); !ok || !Sealed(ps.GetPayloads()[i]) {
			return err
		}
	}
	for i, v := range vs {
		*v.(*converter.RawValue) = converter.NewRawValue(ps.GetPayloads()[i])
	}
	return nil
}

// Sealed reports whether p is a payload sealed by a Codec (its encoding
// is MetadataEncoding); KeyID names the key it was sealed with.
func Sealed(p *commonpb.Payload) bool {
	return string(p.GetMetadata()["encoding"]) == MetadataEncoding
}

// KeyID is the id of the key a sealed payload names ("" for another).
func KeyID(p *commonpb.Payload) string { return string(p.GetMetadata()[MetadataKeyID]) }

// FailureConverter moves a failure's message and stack trace into an
// encoded payload (temporal.DefaultFailureConverterOptions
// EncodeCommonAttributes), so that an error that quotes remote text is
// sealed too; the history shows "Encoded failure".
func (k *Keys) FailureConverter() converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter: k.DataConverter(), EncodeCommonAttributes: true,
	})
}
