package mitm

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestFileKeyStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := FileKeyStore{Path: filepath.Join(dir, "ca.key")}
	if _, err := s.Load(); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Load on missing file: %v, want ErrNoKey", err)
	}
	ca1, err := New(Options{Store: s, Permitted: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", st.Mode().Perm())
	}
	ca2, err := New(Options{Store: s, Permitted: []string{"other.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if !ca1.key.Equal(ca2.key) {
		t.Error("second New did not reuse the stored key")
	}
	if err := s.Save([]byte("x")); err == nil {
		t.Error("Save overwrote an existing key")
	}
	if err := os.Chmod(s.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(); err == nil {
		t.Error("Load accepted a world-readable key")
	}
}

func TestNewRequiresConstraints(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without Permitted or Unconstrained succeeded")
	}
}

func TestLeaf(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ca, err := New(Options{Permitted: []string{"api.example.com", "*.github.com", "10.1.2.3"}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	c := ca.Cert()
	if !c.IsCA || !c.MaxPathLenZero || c.MaxPathLen != 0 {
		t.Errorf("CA basic constraints: IsCA=%v MaxPathLen=%d zero=%v", c.IsCA, c.MaxPathLen, c.MaxPathLenZero)
	}
	if !c.PermittedDNSDomainsCritical {
		t.Error("name constraints not critical")
	}
	if c.NotAfter.Sub(now) > DefaultValidity {
		t.Errorf("CA valid until %v", c.NotAfter)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c)
	for _, host := range []string{"api.example.com", "x.github.com", "a.b.github.com", "10.1.2.3"} {
		leaf, err := ca.Leaf(host)
		if err != nil {
			t.Fatalf("Leaf(%q): %v", host, err)
		}
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: now}); err != nil {
			t.Errorf("Leaf(%q) does not verify: %v", host, err)
		}
		if d := leaf.Leaf.NotAfter.Sub(now); d > DefaultLeafValidity {
			t.Errorf("Leaf(%q) valid for %v", host, d)
		}
		again, _ := ca.Leaf(host)
		if again != leaf {
			t.Errorf("Leaf(%q) not cached", host)
		}
	}
	for _, host := range []string{"github.com", "evil.com", "example.com", "10.1.2.4", "api.example.com.evil.net"} {
		if _, err := ca.Leaf(host); !errors.Is(err, ErrNotPermitted) {
			t.Errorf("Leaf(%q) = %v, want ErrNotPermitted", host, err)
		}
	}
	// Even a leaf signed outside our own check fails X.509 verification.
	ca.anyName = true
	ca.dns = nil
	ca.ips = nil
	bad, err := ca.Leaf("evil.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Leaf.Verify(x509.VerifyOptions{DNSName: "evil.com", Roots: roots, CurrentTime: now}); err == nil {
		t.Error("leaf outside the name constraints verified")
	}
}

func TestLeafSingleflight(t *testing.T) {
	t.Parallel()
	ca, err := New(Options{Permitted: []string{"a.test"}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]any, 16)
	for i := range got {
		wg.Go(func() {
			c, err := ca.Leaf("a.test")
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	wg.Wait()
	for _, c := range got[1:] {
		if c != got[0] {
			t.Fatal("concurrent Leaf calls minted different certificates")
		}
	}
}

func TestLeafRenewal(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ca, err := New(Options{Permitted: []string{"a.test"}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	l1, _ := ca.Leaf("a.test")
	now = now.Add(DefaultLeafValidity - 30*time.Minute)
	l2, _ := ca.Leaf("a.test")
	if l1 == l2 {
		t.Error("leaf near expiry was not renewed")
	}
}

func TestBundlePEM(t *testing.T) {
	t.Parallel()
	ca, err := New(Options{Permitted: []string{"a.test"}})
	if err != nil {
		t.Fatal(err)
	}
	sys := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----")
	b := ca.BundlePEM(sys)
	var n int
	rest := b
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		n++
	}
	if n != 2 {
		t.Errorf("bundle has %d PEM blocks, want 2:\n%s", n, b)
	}
	if len(ca.BundlePEM(nil)) == 0 {
		t.Error("empty bundle without system roots")
	}
}
