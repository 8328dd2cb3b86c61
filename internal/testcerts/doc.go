// Package testcerts makes a throwaway certificate authority, a server
// certificate for 127.0.0.1 and localhost, and a client certificate, as
// PEM files, for tests and local runs of TLS and mutual TLS (crypto/x509;
// ECDSA P-256; valid for one day). Never use them for anything else.
package testcerts
