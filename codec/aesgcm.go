package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/proto"
)

// The metadata of a sealed payload. "encoding" is what Temporal's tools
// read to tell a payload's format; the key id says which key opens it.
const (
	MetadataEncoding = "binary/encrypted"
	MetadataKeyID    = "encryption-key-id"
	MetadataCipher   = "encryption-cipher"
	CipherAES256GCM  = "AES-256-GCM"
)

// Codec seals each payload whole (its metadata and data, marshaled as a
// protobuf Payload) with AES-256-GCM under the newest key: a fresh
// 12-byte random nonce, then the ciphertext and its 16-byte tag, with the
// key id as additional data. Decode opens a sealed payload with the key
// its metadata names, and returns any other payload as it is. It
// implements converter.PayloadCodec and is safe for concurrent use.
type Codec struct {
	keys *Keys
}

func aead(secret []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Encode seals every payload under the newest key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	key := c.keys.keys[len(c.keys.keys)-1]
	g, err := aead(key.secret)
	if err != nil {
		return nil, err
	}
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encrypting a payload: %w", err)
		}
		nonce := make([]byte, g.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				"encoding":     []byte(MetadataEncoding),
				MetadataKeyID:  []byte(key.ID),
				MetadataCipher: []byte(CipherAES256GCM),
			},
			Data: g.Seal(nonce, nonce, plain, []byte(key.ID)),
		}
	}
	return out, nil
}

// Decode opens every sealed payload. Errors: a payload sealed with a key
// this ring does not have (named by its id), or one that does not open
// (wrong key, or altered).
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()["encoding"]) != MetadataEncoding {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		if ciph := string(p.GetMetadata()[MetadataCipher]); ciph != CipherAES256GCM {
			return nil, fmt.Errorf("payload sealed with cipher %q; this codec opens %s", ciph, CipherAES256GCM)
		}
		secret, ok := c.keys.byID[id]
		if !ok {
			return nil, fmt.Errorf("payload sealed with key %q, which is not among the keys given (%s)", id, strings.Join(c.keys.IDs(), ", "))
		}
		g, err := aead(secret)
		if err != nil {
			return nil, err
		}
		if len(p.Data) < g.NonceSize()+g.Overhead() {
			return nil, fmt.Errorf("payload sealed with key %q is too short (%d bytes)", id, len(p.Data))
		}
		nonce, sealed := p.Data[:g.NonceSize()], p.Data[g.NonceSize():]
		plain, err := g.Open(nil, nonce, sealed, []byte(id))
		if err != nil {
			return nil, fmt.Errorf("payload sealed with key %q does not open: %w", id, errors.New("wrong key or altered"))
		}
		var dec commonpb.Payload
		if err := proto.Unmarshal(plain, &dec); err != nil {
			return nil, fmt.Errorf("payload sealed with key %q: %w", id, err)
		}
		out[i] = &dec
	}
	return out, nil
}
