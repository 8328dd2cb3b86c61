package a2aclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// tlsReloader holds the client certificate and CA pool of a TLSFiles
// entry and reads them again when a file's modification time or size
// changes (checked at each TLS handshake), so that certificates rotate
// without a restart. A rotation caught half-way (a certificate that does
// not match its key yet, a CA file that does not parse) keeps what was
// loaded before, and is read again at the next handshake. Connections
// already open keep the certificate they were made with.
type tlsReloader struct {
	files TLSFiles

	mu    sync.Mutex
	stamp map[string]fileStamp
	cert  *tls.Certificate
	pool  *x509.CertPool
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// newTLSReloader loads the files (errors name the file at fault) and
// returns a TLS client configuration that uses them: GetClientCertificate
// presents the certificate as it is now; with a CA file, VerifyConnection
// verifies the server's chain and name against the CA file as it is now
// (the standard verification is off only because it cannot see a pool
// that changes: VerifyConnection does all of it, RFC 5280 path and RFC
// 6125 name).
func newTLSReloader(f TLSFiles) (*tls.Config, error) {
	r := &tlsReloader{files: f, stamp: map[string]fileStamp{}}
	if err := r.reload(true); err != nil {
		return nil, err
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CertFile != "" {
		conf.GetClientCertificate = r.clientCertificate
	}
	if f.CAFile != "" {
		conf.InsecureSkipVerify = true
		conf.VerifyConnection = r.verifyConnection
	}
	return conf, nil
}

// changed reports whether any file differs from what was loaded, and the
// stamps now.
func (r *tlsReloader) changed() (bool, map[string]fileStamp, error) {
	now := map[string]fileStamp{}
	changed := false
	for _, p := range []string{r.files.CertFile, r.files.KeyFile, r.files.CAFile} {
		if p == "" {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return false, nil, fmt.Errorf("%s: %v", p, unwrapPath(err))
		}
		now[p] = fileStamp{fi.ModTime(), fi.Size()}
		if now[p] != r.stamp[p] {
			changed = true
		}
	}
	return changed, now, nil
}

// reload reads the files when they changed (always when first); errors
// are returned when first, else the old material stays.
func (r *tlsReloader) reload(first bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed, stamps, err := r.changed()
	if err != nil || !changed {
		return err
	}
	var cert *tls.Certificate
	if r.files.CertFile != "" {
		c, err := tls.LoadX509KeyPair(r.files.CertFile, r.files.KeyFile)
		if err != nil {
			return fmt.Errorf("cert_file %s, key_file %s: %v", r.files.CertFile, r.files.KeyFile, unwrapPath(err))
		}
		cert = &c
	}
	var pool *x509.CertPool
	if r.files.CAFile != "" {
		b, err := os.ReadFile(r.files.CAFile)
		if err != nil {
			return fmt.Errorf("ca_file %s: %v", r.files.CAFile, unwrapPath(err))
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return fmt.Errorf("ca_file %s: no PEM certificate in it", r.files.CAFile)
		}
	}
	r.cert, r.pool, r.stamp = cert, pool, stamps
	return nil
}

func (r *tlsReloader) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	_ = r.reload(false)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cert, nil
}

func (r *tlsReloader) verifyConnection(cs tls.ConnectionState) error {
	_ = r.reload(false)
	r.mu.Lock()
	pool := r.pool
	r.mu.Unlock()
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the server sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		DNSName: cs.ServerName, Roots: pool, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
