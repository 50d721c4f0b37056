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

// Transcripts are written by one writer per manager, never on an agent's
// goroutine, into one append-only file per manager (its run): every
// agent's events as JSON lines, each naming its agent, in Seq order per
// agent. An agent hands each event to the writer's queue and goes on; the
// writer encodes what has queued and appends it with one write, as soon as
// it can. So a crash leaves every line that reached the disk whole, loses
// only what was still queued (the writer is never more than one batch
// behind, a few milliseconds), and a slow or failing disk never slows or
// fails a run. One file per run rather than per agent: creating a file
// costs far more than appending a batch (about 0.6 ms against 1 µs on the
// machine the benchmarks ran on), and a run's agents are read together.

// transcriptEndWait bounds how long an ending agent waits for its events
// to reach the disk before Done closes.
const transcriptEndWait = time.Second

// transcriptItem is an event to write, or (with done set) a request to be
// told when everything queued before it is on disk.
type transcriptItem struct {
	e    *Event
	done chan struct{}
}

type transcriptWriter struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	queue   []transcriptItem
	wake    chan struct{}
	closing bool
	stopped chan struct{}

	// The writer goroutine's own.
	f        *os.File
	failed   bool
	buf      []byte
	warnOnce sync.Once
}

func newTranscriptWriter(path string, log *slog.Logger) *transcriptWriter {
	w := &transcriptWriter{path: path, log: log, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go w.run()
	return w
}

// add queues an event; events are written in the order they are added.
// After close it does nothing.
func (w *transcriptWriter) add(e *Event) {
	w.push(transcriptItem{e: e})
}

// synced returns a channel closed once everything queued before the call
// is on disk (or failed).
func (w *transcriptWriter) synced() <-chan struct{} {
	done := make(chan struct{})
	if !w.push(transcriptItem{done: done}) {
		close(done)
	}
	return done
}

func (w *transcriptWriter) push(it transcriptItem) bool {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return false
	}
	w.queue = append(w.queue, it)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// close writes what is queued, closes the file and stops the writer.
func (w *transcriptWriter) close() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.stopped
}

func (w *transcriptWriter) run() {
	defer close(w.stopped)
	var batch []transcriptItem
	for {
		<-w.wake
		for {
			w.mu.Lock()
			batch, w.queue = w.queue, batch[:0]
			closing := w.closing
			w.mu.Unlock()
			if len(batch) == 0 {
				if closing {
					if w.f != nil {
						_ = w.f.Close()
					}
					return
				}
				break
			}
			w.write(batch)
			clear(batch)
		}
	}
}

// write encodes a batch's events and appends them with one write, then
// tells those who asked.
func (w *transcriptWriter) write(batch []transcriptItem) {
	w.buf = w.buf[:0]
	for _, it := range batch {
		if it.e == nil || w.failed {
			continue
		}
		w.buf = append(appendEventJSON(w.buf, it.e), '\n')
	}
	if len(w.buf) > 0 && !w.failed {
		if w.f == nil {
			// Made on first use, so a run refused at spawn leaves nothing.
			err := os.MkdirAll(filepath.Dir(w.path), 0o700)
			if err == nil {
				w.f, err = os.OpenFile(w.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			}
			if err != nil {
				w.failed = true
				w.warn("cannot open the transcript; the run goes on without one", err)
			}
		}
		if w.f != nil {
			if _, err := w.f.Write(w.buf); err != nil {
				w.failed = true
				w.warn("cannot write the transcript; the run goes on without it", err)
			}
		}
	}
	for _, it := range batch {
		if it.done != nil {
			close(it.done)
		}
	}
	if cap(w.buf) > 1<<20 {
		w.buf = nil // a burst's buffer is not kept
	}
}

// warn logs the first failure only: a full or unwritable disk would
// otherwise log once per batch.
func (w *transcriptWriter) warn(msg string, err error) {
	w.warnOnce.Do(func() { w.log.Warn("transcript: "+msg, "path", w.path, "err", err) })
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
