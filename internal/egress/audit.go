package egress

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// auditRecord is one JSON line in Config.Audit. Field names are stable.
type auditRecord struct {
	Time     string `json:"time"`
	Kind     string `json:"kind"` // http, connect, socks, mitm
	Host     string `json:"host"`
	Port     int    `json:"port,omitempty"`
	Method   string `json:"method,omitempty"`
	Path     string `json:"path,omitempty"`
	Decision string `json:"decision"` // allow, deny
	Rule     string `json:"rule,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

type auditLog struct {
	mu  sync.Mutex
	enc *json.Encoder
	now func() time.Time
}

func newAuditLog(w io.Writer, now func() time.Time) *auditLog {
	if w == nil {
		return nil
	}
	return &auditLog{enc: json.NewEncoder(w), now: now}
}

func (a *auditLog) write(r auditRecord) error {
	if a == nil {
		return nil
	}
	r.Time = a.now().UTC().Format(time.RFC3339Nano)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.enc.Encode(r)
}
