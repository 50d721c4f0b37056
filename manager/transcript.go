package manager

import (
	"encoding/json"
	"log/slog"
	"os"
	"sync"
)

// transcript appends an agent's events to a JSON-lines file, one write per
// event, so a crash leaves every event before it readable.
type transcript struct {
	path   string
	mu     sync.Mutex
	f      *os.File
	failed bool
}

func (t *transcript) write(e *Event, log *slog.Logger) {
	line, err := json.Marshal(e)
	if err != nil {
		log.Warn("transcript: cannot encode event", "path", t.path, "err", err)
		return
	}
	line = append(line, '\n')
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed {
		return
	}
	if t.f == nil {
		t.f, err = os.OpenFile(t.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.failed = true
			log.Warn("transcript: cannot open; the run goes on without one", "path", t.path, "err", err)
			return
		}
	}
	if _, err := t.f.Write(line); err != nil {
		t.failed = true
		log.Warn("transcript: write failed; the run goes on without it", "path", t.path, "err", err)
	}
}

func (t *transcript) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f != nil {
		_ = t.f.Close()
		t.f = nil
	}
	t.failed = true
}
