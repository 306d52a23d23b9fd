package main

// Throwaway PKI for one test bed: a CA, the apiserver's serving cert, an admin
// client cert in system:masters, and the service-account signing key pair.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

type pki struct {
	dir                         string
	caCert, adminCert, adminKey []byte // PEM, also embedded in the kubeconfig
	token                       string
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

func writePEM(path, typ string, der []byte) ([]byte, error) {
	b := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	return b, os.WriteFile(path, b, 0o600)
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(k)
	return k, der, err
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func newPKI(dir string) (*pki, error) {
	p := &pki{dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	now := time.Now().Add(-time.Hour) // tolerate small clock skew
	until := now.Add(10 * 365 * 24 * time.Hour)

	caKey, _, err := newKey()
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "testbed-ca"},
		NotBefore: now, NotAfter: until, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if p.caCert, err = writePEM(p.path("ca.crt"), "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)

	// issue signs a leaf cert and writes NAME.crt / NAME.key.
	issue := func(name string, tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
		k, kDER, err := newKey()
		if err != nil {
			return nil, nil, err
		}
		tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial(), now, until
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		if certPEM, err = writePEM(p.path(name+".crt"), "CERTIFICATE", der); err != nil {
			return nil, nil, err
		}
		keyPEM, err = writePEM(p.path(name+".key"), "EC PRIVATE KEY", kDER)
		return certPEM, keyPEM, err
	}

	// Serving cert: loopback plus the in-cluster names of the kubernetes Service.
	if _, _, err := issue("apiserver", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1)},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}); err != nil {
		return nil, err
	}
	// Admin client cert: O=system:masters is bound to cluster-admin and bypasses RBAC.
	if p.adminCert, p.adminKey, err = issue("admin", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "testbed-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}

	// Service-account token signing key (ES256) and its public half.
	saKey, saDER, err := newKey()
	if err != nil {
		return nil, err
	}
	if _, err := writePEM(p.path("sa.key"), "EC PRIVATE KEY", saDER); err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if _, err := writePEM(p.path("sa.pub"), "PUBLIC KEY", pubDER); err != nil {
		return nil, err
	}

	// Static bearer token for clients that find a header easier than a client cert.
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	p.token = hex.EncodeToString(raw)
	line := p.token + `,testbed-admin,testbed-admin,"system:masters"` + "\n"
	if err := os.WriteFile(p.path("tokens.csv"), []byte(line), 0o600); err != nil {
		return nil, err
	}
	return p, os.WriteFile(filepath.Join(filepath.Dir(dir), "token"), []byte(p.token), 0o600)
}
