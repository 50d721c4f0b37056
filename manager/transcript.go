package manager

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
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
		// The directory is made on first use, so a run refused at spawn
		// leaves nothing on disk.
		if err = os.MkdirAll(filepath.Dir(t.path), 0o700); err == nil {
			t.f, err = os.OpenFile(t.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		}
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

// DefaultRetention is how long transcripts are kept by default.
const DefaultRetention = 7 * 24 * time.Hour

// PruneTranscripts removes transcripts in dir last written more than
// maxAge ago and returns how many it removed. A missing dir is not an
// error.
func PruneTranscripts(dir string, maxAge time.Duration) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	cutoff := time.Now().Add(-maxAge)
	removed := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || filepath.Ext(e.Name()) != ".jsonl" {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
			removed++
		}
	}
	return removed, nil
}

// maxTranscriptRead caps what ReadTranscript reads of one file.
const maxTranscriptRead = 64 << 20

// ReadTranscript reads a transcript back. A last line cut short by a crash
// is skipped; any other bad line is an error naming it. Only a regular
// file is read (a named pipe or device in the runs directory is an error,
// never a wait), and only its first 64 MiB: the events of a longer one
// come back with an error saying it was cut.
func ReadTranscript(path string) ([]Event, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s); a transcript is a JSON-lines file", path, fileKind(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() { // replaced between the two looks
		return nil, fmt.Errorf("%s is not a regular file (%s); a transcript is a JSON-lines file", path, fileKind(fi.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTranscriptRead+1))
	if err != nil {
		return nil, err
	}
	cut := len(data) > maxTranscriptRead
	if cut {
		data = data[:maxTranscriptRead]
	}
	var events []Event
	lines := bytes.Split(data, []byte("\n"))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			if i == len(lines)-1 {
				break // torn final write, or where the read stopped
			}
			return events, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		events = append(events, e)
	}
	if cut {
		return events, fmt.Errorf("%s is %d bytes; only the first %d MiB were read", path, fi.Size(), maxTranscriptRead>>20)
	}
	return events, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}
