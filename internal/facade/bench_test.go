package facade

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

type benchTarget struct {
	c   *http.Client
	url string
	hdr http.Header
}

func benchSetup(b *testing.B, kind string) benchTarget {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	b.Cleanup(up.Close)
	if kind == "direct" {
		return benchTarget{c: tcpClient(b), url: up.URL + "/x"}
	}
	h := setup(b, Config{Logger: slog.New(slog.DiscardHandler)})
	if err := h.f.SetRoute(Route{Mount: "m", Upstream: up.URL}); err != nil {
		b.Fatal(err)
	}
	if kind == "unix" {
		return benchTarget{c: unixClient(b, h.trusted), url: "http://warden/m/x"}
	}
	return benchTarget{c: tcpClient(b), url: "http://" + h.tcpAddr + "/m/x", hdr: http.Header{"Authorization": {"Bearer " + testToken}}}
}

func (bt benchTarget) get(b *testing.B) {
	req, _ := http.NewRequestWithContext(context.Background(), "GET", bt.url, nil)
	req.Header = bt.hdr
	resp, err := bt.c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

func reportLatency(b *testing.B, lat []time.Duration, cpu0 time.Duration) {
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func benchSerial(b *testing.B, kind string) {
	bt := benchSetup(b, kind)
	bt.get(b) // warm the pools
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		t0 := time.Now()
		bt.get(b)
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat, cpu0)
}

// benchParallel runs at concurrency 16.
func benchParallel(b *testing.B, kind string) {
	bt := benchSetup(b, kind)
	// Warm the pools at the measured concurrency, so that neither side
	// dials inside the timed loop (the facade would dial twice).
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { bt.get(b) })
	}
	wg.Wait()
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			t0 := time.Now()
			bt.get(b)
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	reportLatency(b, lat, cpu0)
}

func BenchmarkDirect(b *testing.B)               { benchSerial(b, "direct") }
func BenchmarkFacadeUnix(b *testing.B)           { benchSerial(b, "unix") }
func BenchmarkFacadeTCP(b *testing.B)            { benchSerial(b, "tcp") }
func BenchmarkDirectParallel16(b *testing.B)     { benchParallel(b, "direct") }
func BenchmarkFacadeUnixParallel16(b *testing.B) { benchParallel(b, "unix") }
func BenchmarkFacadeTCPParallel16(b *testing.B)  { benchParallel(b, "tcp") }
