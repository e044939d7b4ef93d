package sidecar

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// rotator is an append-only log that moves itself to <path>.1 once it
// would exceed max bytes; only one old generation is kept.
type rotator struct {
	mu   sync.Mutex
	path string
	max  int64
	f    *os.File
	size int64
}

// openRotator starts a fresh log, keeping the previous run's as .1.
func openRotator(path string, maxBytes int64) (*rotator, error) {
	r := &rotator{path: path, max: maxBytes}
	if err := r.rotateLocked(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rotator) rotateLocked() error {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
	if err := os.Rename(r.path, r.path+".1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rotate log: %w", err)
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	r.f, r.size = f, 0
	return nil
}

func (r *rotator) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, os.ErrClosed
	}
	if r.size > 0 && r.size+int64(len(p)) > r.max {
		if err := r.rotateLocked(); err != nil {
			return 0, err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *rotator) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
