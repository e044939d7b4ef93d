package mockmodel

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestSelfSigned(t *testing.T) {
	t.Parallel()
	caPEM, cert, err := SelfSigned("model.example.test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(New(Options{}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA PEM holds no certificate")
	}
	get := func(name string) error {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: name, MinVersion: tls.VersionTLS12}}}
		resp, err := c.Get(srv.URL + "/")
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	if err := get("model.example.test"); err != nil {
		t.Errorf("the named host does not verify: %v", err)
	}
	if err := get("other.example.test"); err == nil {
		t.Error("another name verified against the throw-away CA")
	}
}
