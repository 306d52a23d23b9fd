package main

// Throwaway PKI for one test bed: a CA, the apiserver's serving cert, an admin
// client cert in system:masters, and the service-account signing key pair.
// newPKI makes one; loadPKI (--keep) takes back the one an earlier run left.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type pki struct {
	dir                         string
	caCert, adminCert, adminKey []byte // PEM, also embedded in the kubeconfig
	token                       string
	nodeCert, nodeKey           []byte // the real node's kubelet; absent in a PKI from before it existed
}

// nodeName is the real node's name (NODE_NAME in testbed/real-node.ts).
const nodeName = "testbed-node"

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

	// The real node's kubelet (testbed/real-node.ts): in system:nodes as system:node:<its
	// name>, so the Node authorizer gives it what a kubelet gets, not cluster-admin.
	nodeCert, nodeKey, err := issue("node", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	p.nodeCert, p.nodeKey = nodeCert, nodeKey

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

// pkiFiles are what newPKI writes into the pki dir (besides DIR/token, derived from tokens.csv).
var pkiFiles = []string{"ca.crt", "apiserver.crt", "apiserver.key", "admin.crt", "admin.key", "sa.key", "sa.pub", "tokens.csv"}

// hasPKI tells whether an earlier run left a PKI in dir (loadPKI then says whether it is whole).
func hasPKI(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "ca.crt"))
	return err == nil
}

// loadPKI takes back the PKI newPKI wrote into dir, checking that it is whole and
// consistent: both leaf certs signed by the CA and matching their keys, the
// service-account pair matching, a token in tokens.csv.
func loadPKI(dir string) (*pki, error) {
	p := &pki{dir: dir}
	files := map[string][]byte{}
	for _, name := range pkiFiles {
		b, err := os.ReadFile(p.path(name))
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	p.caCert, p.adminCert, p.adminKey = files["ca.crt"], files["admin.crt"], files["admin.key"]
	p.nodeCert, _ = os.ReadFile(p.path("node.crt"))
	p.nodeKey, _ = os.ReadFile(p.path("node.key"))

	caBlock, _ := pem.Decode(p.caCert)
	if caBlock == nil {
		return nil, errors.New("ca.crt: no PEM block")
	}
	ca, err := x509.ParseCertificate(caBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("ca.crt: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, leaf := range []struct {
		name  string
		usage x509.ExtKeyUsage
	}{{"apiserver", x509.ExtKeyUsageServerAuth}, {"admin", x509.ExtKeyUsageClientAuth}} {
		pair, err := tls.X509KeyPair(files[leaf.name+".crt"], files[leaf.name+".key"])
		if err != nil {
			return nil, fmt.Errorf("%s.crt/.key: %w", leaf.name, err)
		}
		cert, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return nil, fmt.Errorf("%s.crt: %w", leaf.name, err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{leaf.usage}}); err != nil {
			return nil, fmt.Errorf("%s.crt: %w", leaf.name, err)
		}
	}

	saBlock, _ := pem.Decode(files["sa.key"])
	if saBlock == nil {
		return nil, errors.New("sa.key: no PEM block")
	}
	saKey, err := x509.ParseECPrivateKey(saBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("sa.key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if pubBlock, _ := pem.Decode(files["sa.pub"]); pubBlock == nil || !bytes.Equal(pubBlock.Bytes, pubDER) {
		return nil, errors.New("sa.pub does not match sa.key")
	}

	p.token, _, _ = strings.Cut(strings.TrimSpace(string(files["tokens.csv"])), ",")
	if p.token == "" {
		return nil, errors.New("tokens.csv: no token")
	}
	return p, os.WriteFile(filepath.Join(filepath.Dir(dir), "token"), []byte(p.token), 0o600)
}
