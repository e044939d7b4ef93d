package mitm

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Defaults for Options.
const (
	DefaultValidity     = 7 * 24 * time.Hour
	DefaultLeafValidity = 24 * time.Hour
	// leafRenew is how long before expiry a cached leaf is replaced.
	leafRenew = time.Hour
	clockSkew = 5 * time.Minute
)

// Options configures New.
type Options struct {
	// Store persists the per-install key. Nil means an ephemeral key.
	Store KeyStore
	// Permitted lists the hosts the CA may issue for: "a.com" (that name
	// and its subdomains, as X.509 constraints match), "*.a.com"
	// (subdomains only) or IP literals. Empty means unconstrained, which
	// New accepts only with Unconstrained set.
	Permitted     []string
	Unconstrained bool
	Validity      time.Duration // CA certificate; default DefaultValidity
	LeafValidity  time.Duration // default DefaultLeafValidity
	Now           func() time.Time
}

// CA issues leaf certificates for intercepted hosts.
type CA struct {
	key      *ecdsa.PrivateKey
	cert     *x509.Certificate
	certPEM  []byte
	leafLife time.Duration
	now      func() time.Time
	dns      []string // permitted DNS constraints; nil with anyName
	ips      []netip.Addr
	anyName  bool

	mu    sync.Mutex
	leafs map[string]*leafEntry
}

type leafEntry struct {
	ready   chan struct{}
	cert    *tls.Certificate
	err     error
	expires time.Time
}

// ErrNotPermitted is returned by Leaf for a host outside the constraints.
var ErrNotPermitted = errors.New("mitm: host outside the CA's name constraints")

// New loads (or generates and saves) the install key and mints this
// session's CA certificate.
func New(o Options) (*CA, error) {
	if len(o.Permitted) == 0 && !o.Unconstrained {
		return nil, errors.New("mitm: no permitted hosts (set Unconstrained to allow any)")
	}
	if o.Validity <= 0 {
		o.Validity = DefaultValidity
	}
	if o.LeafValidity <= 0 {
		o.LeafValidity = DefaultLeafValidity
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	key, err := loadOrCreateKey(o.Store)
	if err != nil {
		return nil, err
	}
	c := &CA{key: key, leafLife: o.LeafValidity, now: o.Now, leafs: map[string]*leafEntry{}, anyName: len(o.Permitted) == 0}
	for _, h := range o.Permitted {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
			c.ips = append(c.ips, a.Unmap())
			continue
		}
		if rest, ok := strings.CutPrefix(h, "*."); ok {
			c.dns = append(c.dns, "."+rest)
			continue
		}
		if h == "" || strings.ContainsAny(h, "*/:@ ") {
			return nil, fmt.Errorf("mitm: bad permitted host %q", h)
		}
		c.dns = append(c.dns, h)
	}

	now := o.Now()
	serial, err := randSerial()
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("mitm: marshal key: %w", err)
	}
	skid := sha256.Sum256(pub)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "warden session CA", Organization: []string{"warden"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(o.Validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		SubjectKeyId:          skid[:20],
	}
	if !c.anyName {
		tmpl.PermittedDNSDomainsCritical = true
		tmpl.PermittedDNSDomains = c.dns
		if len(c.ips) == 0 {
			tmpl.ExcludedIPRanges = []*net.IPNet{
				{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
				{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)},
			}
		}
		for _, a := range c.ips {
			tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())})
		}
		if len(c.dns) == 0 {
			// Only IPs: forbid every DNS name with an impossible constraint.
			tmpl.PermittedDNSDomains = []string{"invalid."}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("mitm: create CA certificate: %w", err)
	}
	c.cert, err = x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("mitm: parse CA certificate: %w", err)
	}
	c.certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return c, nil
}

func loadOrCreateKey(s KeyStore) (*ecdsa.PrivateKey, error) {
	if s != nil {
		b, err := s.Load()
		switch {
		case err == nil:
			return parseKey(b)
		case !errors.Is(err, ErrNoKey):
			return nil, err
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("mitm: generate key: %w", err)
	}
	if s != nil {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, fmt.Errorf("mitm: marshal key: %w", err)
		}
		if err := s.Save(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil {
			return nil, err
		}
	}
	return key, nil
}

func parseKey(b []byte) (*ecdsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, errors.New("mitm: stored key is not a PKCS#8 PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("mitm: parse stored key: %w", err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok || ek.Curve != elliptic.P256() {
		return nil, errors.New("mitm: stored key is not ECDSA P-256")
	}
	return ek, nil
}

func randSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("mitm: serial: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// Cert returns the session CA certificate.
func (c *CA) Cert() *x509.Certificate { return c.cert }

// CertPEM returns the session CA certificate in PEM form.
func (c *CA) CertPEM() []byte { return bytes.Clone(c.certPEM) }

// BundlePEM returns systemRoots followed by the CA certificate, for the
// sandbox's SSL_CERT_FILE.
func (c *CA) BundlePEM(systemRoots []byte) []byte {
	var b bytes.Buffer
	b.Write(systemRoots)
	if len(systemRoots) > 0 && systemRoots[len(systemRoots)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString("# warden session CA\n")
	b.Write(c.certPEM)
	return b.Bytes()
}

// Permits reports whether the CA may issue a leaf for host (a normalised
// name or IP literal), mirroring the X.509 constraint semantics.
func (c *CA) Permits(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		if c.anyName {
			return true
		}
		for _, p := range c.ips {
			if p == a.Unmap() {
				return true
			}
		}
		return false
	}
	if c.anyName {
		return true
	}
	for _, d := range c.dns {
		if strings.HasPrefix(d, ".") {
			if strings.HasSuffix(host, d) && len(host) > len(d) {
				return true
			}
			continue
		}
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// Leaf returns a certificate for host (a normalised name or IP literal),
// minting it on first use. Concurrent callers for one host share one
// minting.
func (c *CA) Leaf(host string) (*tls.Certificate, error) {
	if !c.Permits(host) {
		return nil, fmt.Errorf("%w: %q", ErrNotPermitted, host)
	}
	now := c.now()
	c.mu.Lock()
	e := c.leafs[host]
	if e != nil {
		select {
		case <-e.ready:
			if e.err != nil || now.After(e.expires.Add(-leafRenew)) {
				e = nil
			}
		default:
		}
	}
	if e == nil {
		e = &leafEntry{ready: make(chan struct{})}
		c.leafs[host] = e
		c.mu.Unlock()
		e.cert, e.expires, e.err = c.mint(host, now)
		close(e.ready)
		return e.cert, e.err
	}
	c.mu.Unlock()
	<-e.ready
	return e.cert, e.err
}

// ResetCache forgets every cached leaf; the next Leaf call mints anew.
func (c *CA) ResetCache() {
	c.mu.Lock()
	c.leafs = map[string]*leafEntry{}
	c.mu.Unlock()
}

// GetCertificate returns a tls.Config.GetCertificate that serves host's
// leaf, whatever SNI the client sent.
func (c *CA) GetCertificate(host string) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.Leaf(host) }
}

func (c *CA) mint(host string, now time.Time) (*tls.Certificate, time.Time, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("mitm: leaf key: %w", err)
	}
	serial, err := randSerial()
	if err != nil {
		return nil, time.Time{}, err
	}
	notAfter := now.Add(c.leafLife)
	if notAfter.After(c.cert.NotAfter) {
		notAfter = c.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if a, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = []net.IP{a.AsSlice()}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("mitm: leaf certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("mitm: parse leaf: %w", err)
	}
	return &tls.Certificate{
		Certificate: [][]byte{der, c.cert.Raw},
		PrivateKey:  key,
		Leaf:        leaf,
	}, notAfter, nil
}
