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
	"slices"
	"sync"
	"time"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// Transcripts are written by one writer per manager into one append-only
// file per manager (its run): every agent's events as JSON lines, each
// naming its agent, in Seq order per agent. An agent encodes its event on
// its own goroutine and appends the line to the writer's buffer; only the
// writer's goroutine writes, appending what has gathered with one write,
// as soon as it can. So an agent never writes to the disk, a crash leaves
// every line that reached the disk whole and loses only what was still
// buffered, and a failing disk never fails a run. Only when the disk
// cannot keep up and the buffer holds maxTranscriptBuffer bytes does an
// agent wait for it: memory, and what a crash can lose, stay bounded by
// it. One file per run rather than per agent: creating a file costs far
// more than appending a batch (about 0.6 ms against 1 µs on the machine
// the benchmarks ran on), and a run's agents are read together.

// transcriptEndWait bounds how long an ending agent waits for its events
// to reach the disk before Done closes.
const transcriptEndWait = time.Second

// maxTranscriptBuffer is how many bytes of lines may wait for the disk
// before agents wait for the writer.
const maxTranscriptBuffer = 1 << 20

type transcriptWriter struct {
	path string
	log  *slog.Logger

	// flushMu is held from taking a batch to writing it, so batches
	// reach the disk in order.
	flushMu sync.Mutex
	mu      sync.Mutex
	cond    *sync.Cond // signalled when a batch was written or the writer stops
	pending []byte     // lines not yet handed to the disk
	queued  uint64     // bytes ever added
	written uint64     // bytes ever handed to the disk (or dropped after a failure)
	closing bool
	// waiters are the ending agents waiting for their lines to reach the
	// disk, each closed once written passes its target.
	waiters []syncWaiter
	wake    chan struct{}
	stopped chan struct{}

	// Guarded by flushMu.
	f        *os.File
	failed   bool
	spare    []byte
	warnOnce sync.Once
}

func newTranscriptWriter(path string, log *slog.Logger) *transcriptWriter {
	w := &transcriptWriter{path: path, log: log, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.run()
	return w
}

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// add encodes e and queues its line; lines are written in the order they
// are added. After close it does nothing.
func (w *transcriptWriter) add(e *Event) {
	bp := lineBufs.Get().(*[]byte)
	line := append(appendEventJSON((*bp)[:0], e), '\n')
	w.mu.Lock()
	for len(w.pending) >= maxTranscriptBuffer && !w.closing {
		w.cond.Wait() // the disk is behind: wait for it rather than grow
	}
	if !w.closing {
		w.pending = append(w.pending, line...)
		w.queued += uint64(len(line))
	}
	w.mu.Unlock()
	*bp = line
	lineBufs.Put(bp)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// flushLocked writes what has gathered; w.flushMu is held. It reports
// whether there was anything, and whether the writer is closing.
func (w *transcriptWriter) flushLocked() (wrote, closing bool) {
	w.mu.Lock()
	batch := w.pending
	w.pending = w.spare[:0]
	w.spare = nil
	closing = w.closing
	w.mu.Unlock()
	if len(batch) == 0 {
		w.spare = batch
		return false, closing
	}
	w.write(batch)
	w.mu.Lock()
	w.written += uint64(len(batch))
	w.cond.Broadcast()
	w.wakeWaiters(false)
	w.mu.Unlock()
	if cap(batch) > 2*maxTranscriptBuffer {
		batch = nil // a burst's buffer is not kept
	}
	w.spare = batch[:0]
	return true, closing
}

type syncWaiter struct {
	target uint64
	done   chan struct{}
}

// synced returns a channel closed once everything added before the call
// is on disk (or failed), or the writer stopped. A caller that stops
// waiting first calls forget; nothing else waits on its behalf.
func (w *transcriptWriter) synced() <-chan struct{} {
	done := make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written >= w.queued || w.isStopped() {
		close(done)
		return done
	}
	w.waiters = append(w.waiters, syncWaiter{target: w.queued, done: done})
	return done
}

// forget drops the wait for done, which synced returned.
func (w *transcriptWriter) forget(done <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waiters = slices.DeleteFunc(w.waiters, func(s syncWaiter) bool { return s.done == done })
}

// wakeWaiters closes the waits that written has passed, or all of them
// when the writer stops; w.mu is held.
func (w *transcriptWriter) wakeWaiters(all bool) {
	w.waiters = slices.DeleteFunc(w.waiters, func(s syncWaiter) bool {
		if all || w.written >= s.target {
			close(s.done)
			return true
		}
		return false
	})
}

func (w *transcriptWriter) isStopped() bool {
	select {
	case <-w.stopped:
		return true
	default:
		return false
	}
}

// close writes what is queued, closes the file and stops the writer.
func (w *transcriptWriter) close() {
	w.mu.Lock()
	w.closing = true
	w.cond.Broadcast()
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.stopped
}

func (w *transcriptWriter) run() {
	defer func() {
		w.mu.Lock()
		close(w.stopped)
		w.cond.Broadcast()
		w.wakeWaiters(true)
		w.mu.Unlock()
	}()
	for {
		<-w.wake
		for {
			w.flushMu.Lock()
			wrote, closing := w.flushLocked()
			if !wrote && closing {
				if w.f != nil {
					_ = w.f.Close()
					w.f, w.failed = nil, true
				}
				w.flushMu.Unlock()
				return
			}
			w.flushMu.Unlock()
			if !wrote {
				break
			}
		}
	}
}

// write appends a batch of lines with one write.
func (w *transcriptWriter) write(batch []byte) {
	if w.failed {
		return
	}
	if w.f == nil {
		// Made on first use, so a run refused at spawn leaves nothing.
		err := os.MkdirAll(filepath.Dir(w.path), 0o700)
		if err == nil {
			w.f, err = os.OpenFile(w.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		}
		if err != nil {
			w.failed = true
			w.warn("cannot open the transcript; the run goes on without one", err)
			return
		}
	}
	if _, err := w.f.Write(batch); err != nil {
		w.failed = true
		w.warn("cannot write the transcript; the run goes on without it", err)
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
	f, fi, err := fsroot.OpenRegular(nil, path)
	if errors.Is(err, fsroot.ErrNotRegular) {
		return nil, fmt.Errorf("%s is not a regular file (a %s); a transcript is a JSON-lines file", path, fsroot.Kind(fi.Mode()))
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
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
