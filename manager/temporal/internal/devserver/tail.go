package devserver

import (
	"fmt"
	"sync"
)

// tail keeps the last limit bytes written to it: a server's output, kept
// bounded however long the server runs, to be shown when something fails.
type tail struct {
	mu      sync.Mutex
	buf     []byte
	limit   int
	dropped int64
}

func newTail(limit int) *tail {
	return &tail{limit: limit}
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.limit {
		t.dropped += int64(len(t.buf) + len(p) - t.limit)
		t.buf = append(t.buf[:0], p[len(p)-t.limit:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.limit; over > 0 {
		t.dropped += int64(over)
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns what is kept, saying first how much earlier output was
// dropped, if any was.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped > 0 {
		return fmt.Sprintf("[%d earlier bytes dropped]\n%s", t.dropped, t.buf)
	}
	return string(t.buf)
}
