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
	"sync/atomic"
	"time"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// Transcripts are written by one writer per manager into one append-only
// file per manager (its run): every agent's events as JSON lines, each
// naming its agent, in Seq order per agent. An agent encodes its event on
// its own goroutine and copies the line into one of the writer's
// buffers, its shard, chosen by its ID; only the writer's goroutine
// writes, appending what has gathered in every shard as soon as it can,
// merged by Seq so that of two events one of which happened before the
// other (a parent's spawn, then its child's), the earlier's line comes
// first whatever the agents' shards. So an agent never writes to the
// disk, agents writing at once rarely wait for each other, a crash leaves
// every line that reached the disk whole and loses only what was still
// buffered, and a failing disk never fails a run. Only when the disk
// cannot keep up and the shards hold maxTranscriptBuffer does an agent
// wait for it: memory, and what a crash can lose, stay bounded by it. One
// file per run rather than per agent: creating a file costs far more than
// appending a batch (about 0.6 ms against 1 µs on the machine the
// benchmarks ran on), and a run's agents are read together.

// transcriptEndWait bounds how long an ending agent waits for its events
// to reach the disk before Done closes.
const transcriptEndWait = time.Second

// maxTranscriptBuffer is how many bytes of lines may wait for the disk
// before agents wait for the writer.
const maxTranscriptBuffer = 1 << 20

// transcriptShards is how many buffers agents add their lines to.
const transcriptShards = 8

// maxShardKept bounds the buffers a writer keeps for its shards between
// flushes, and hands on when it stops: a burst's larger ones are let go.
const maxShardKept = 2 * maxTranscriptBuffer / transcriptShards

// writeChunk is how much of a flush's merged lines the writer hands the
// disk with one write. The writer merges into one buffer of this size
// whatever the flush's: merged whole, into a buffer grown to the largest
// flush (a megabyte or two when agents outrun the writer), a writer
// allocated 1.75 MB more a run of 2,000 agents, for no time saved.
const writeChunk = 64 << 10

type transcriptShard struct {
	mu      sync.Mutex
	cond    sync.Cond // signalled when a batch was written or the writer stops, for adders waiting for room
	pending []byte    // lines not yet handed to the disk
	lines   []lineEnd // where each line of pending ends, and its Seq
	queued  uint64    // bytes ever added
	_       [64]byte  // apart from the next shard's lock
}

type transcriptWriter struct {
	path string
	log  *slog.Logger

	shards  [transcriptShards]transcriptShard
	pending atomic.Int64 // bytes in the shards
	blocked atomic.Int32 // adders waiting for room
	closing atomic.Bool
	// idle is set while the writer waits for lines: only then does an
	// adder wake it.
	idle    atomic.Bool
	wake    chan struct{}
	stopped chan struct{}

	// waitMu guards what was written of each shard and the waits on it:
	// ending agents waiting for their lines to reach the disk.
	waitMu  sync.Mutex
	written [transcriptShards]uint64 // bytes ever handed to the disk (or dropped after a failure)
	waiters []syncWaiter

	// The writer goroutine's own.
	f        *os.File
	failed   bool
	chunk    []byte // where lines are merged, writeChunk at a time
	spare    [transcriptShards]shardLines
	warnOnce sync.Once
}

func newTranscriptWriter(path string, log *slog.Logger) *transcriptWriter {
	w := &transcriptWriter{path: path, log: log, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	for i := range w.shards {
		w.shards[i].cond.L = &w.shards[i].mu
	}
	go w.run()
	return w
}

// shardOf is the shard an agent's lines go to: always the same one, so
// they stay in order.
func shardOf(agentID string) int {
	return int(idHash(agentID) % transcriptShards)
}

// add encodes e and queues its line; the lines of one agent are written
// in the order they are added. After close it does nothing.
func (w *transcriptWriter) add(e *Event) { w.addTo(shardOf(e.AgentID), e, nil) }

// addTo is add for an agent whose shard is known, with the fields that
// name it already encoded as ident (nil: encoded here). The line is
// encoded before the shard's lock is taken, which then only copies it:
// agents of one shard wait for each other that much less.
func (w *transcriptWriter) addTo(shard int, e *Event, ident []byte) {
	lb := linePool.Get().(*lineBuf)
	lb.b = append(appendEventJSONWith(lb.b[:0], e, &lb.times, ident), '\n')
	sh := &w.shards[shard]
	sh.mu.Lock()
	w.awaitRoom(sh)
	if !w.closing.Load() {
		if sh.pending == nil {
			sh.pending = takeBuf(&shardBufs)
		}
		if len(sh.pending)+len(lb.b) > cap(sh.pending) {
			// Room for as much again: doubled, where append would grow a
			// buffer this large by a quarter, copying it again and again
			// as it fills between two flushes.
			sh.pending = slices.Grow(sh.pending, max(16<<10, cap(sh.pending), len(lb.b)))
		}
		sh.pending = append(sh.pending, lb.b...)
		sh.lines = append(sh.lines, lineEnd{end: len(sh.pending), seq: e.Seq})
		sh.queued += uint64(len(lb.b))
		w.pending.Add(int64(len(lb.b)))
	}
	sh.mu.Unlock()
	if cap(lb.b) <= maxPooledLine {
		linePool.Put(lb)
	}
	w.poke()
}

// lineBuf is where a line is encoded before it is added, with the
// formatting of the last time it held.
type lineBuf struct {
	b     []byte
	times timeCache
}

var linePool = sync.Pool{New: func() any { return new(lineBuf) }}

// maxPooledLine bounds the lines whose buffers are kept for the next: a
// long tool result's is not.
const maxPooledLine = 64 << 10

// awaitRoom waits, with sh.mu held, while the shards hold
// maxTranscriptBuffer bytes: the disk is behind, and adders wait for it
// rather than grow. An adder says it waits before it looks again, so a
// flush that frees room either is seen or wakes it.
func (w *transcriptWriter) awaitRoom(sh *transcriptShard) {
	for w.pending.Load() >= maxTranscriptBuffer && !w.closing.Load() {
		w.blocked.Add(1)
		if w.pending.Load() < maxTranscriptBuffer || w.closing.Load() {
			w.blocked.Add(-1)
			return
		}
		sh.cond.Wait()
		w.blocked.Add(-1)
	}
}

// wakeAdders wakes the adders waiting for room.
func (w *transcriptWriter) wakeAdders() {
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		sh.cond.Broadcast()
		sh.mu.Unlock()
	}
}

// poke wakes the writer if it waits.
func (w *transcriptWriter) poke() {
	if w.idle.Load() && w.idle.CompareAndSwap(true, false) {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// lineEnd is where a line ends in its shard's buffer, and its event's Seq.
type lineEnd struct {
	end int
	seq uint64
}

// shardLines is what the writer took of one shard.
type shardLines struct {
	text  []byte
	lines []lineEnd
}

// flush writes what has gathered in every shard. It reports whether there
// was anything.
func (w *transcriptWriter) flush() bool {
	var took [transcriptShards]shardLines
	size := 0
	// Every shard is taken at one instant, all locked at once: a line
	// added after one whose shard came later could otherwise be written
	// before it.
	for i := range w.shards {
		w.shards[i].mu.Lock()
	}
	for i := range w.shards {
		sh := &w.shards[i]
		took[i] = shardLines{text: sh.pending, lines: sh.lines}
		sh.pending, sh.lines = w.spare[i].text[:0], w.spare[i].lines[:0]
		size += len(took[i].text)
	}
	for i := range w.shards {
		w.shards[i].mu.Unlock()
	}
	w.pending.Add(-int64(size))
	if size == 0 {
		w.spare = took // the shards hold what were the spares
		return false
	}
	w.writeMerged(&took)
	w.waitMu.Lock()
	for i := range took {
		w.written[i] += uint64(len(took[i].text))
	}
	w.wakeWaiters(false)
	w.waitMu.Unlock()
	if w.blocked.Load() > 0 {
		w.wakeAdders()
	}
	for i, t := range took {
		if cap(t.text) > maxShardKept {
			t = shardLines{} // a burst's buffer is not kept
		}
		w.spare[i] = t
	}
	return true
}

// writeMerged writes the shards' lines, merged (mergeChunks), a chunk at
// a time.
func (w *transcriptWriter) writeMerged(shards *[transcriptShards]shardLines) {
	if w.failed {
		return // what a failed writer took is dropped
	}
	if w.chunk == nil {
		w.chunk = make([]byte, 0, writeChunk)
	}
	w.chunk = mergeChunks(w.chunk, shards, w.write)
}

// mergeChunks hands write the shards' lines, taking each time the line
// with the lowest Seq at the head of a shard, gathered in chunk a chunk
// of whole lines at a time: a crash between two writes cuts no line. A
// line longer than a chunk goes alone. It returns chunk, emptied, for the
// next flush (a chunk grown for a long line is not kept). Each shard holds
// its lines in the order they were added, so of two events one of which
// happened before the other (a parent's spawn and its child's, say),
// whatever their shards, the earlier's line comes first, as it did when
// there was one buffer.
func mergeChunks(chunk []byte, shards *[transcriptShards]shardLines, write func([]byte)) []byte {
	b := chunk[:0]
	var next, start [transcriptShards]int
	for {
		pick := -1
		for i := range shards {
			if ls := shards[i].lines; next[i] < len(ls) && (pick < 0 || ls[next[i]].seq < shards[pick].lines[next[pick]].seq) {
				pick = i
			}
		}
		if pick < 0 {
			break
		}
		end := shards[pick].lines[next[pick]].end
		line := shards[pick].text[start[pick]:end]
		if len(b) > 0 && len(b)+len(line) > writeChunk {
			write(b)
			b = b[:0]
		}
		b = append(b, line...)
		start[pick] = end
		next[pick]++
	}
	if len(b) > 0 {
		write(b)
	}
	return chunk[:0] // b is chunk, or a longer line's buffer, not kept
}

// waiting reports whether a shard has lines for the writer.
func (w *transcriptWriter) waiting() bool {
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		n := len(sh.pending)
		sh.mu.Unlock()
		if n > 0 {
			return true
		}
	}
	return false
}

// syncWaiter waits until written passes target for the shards in mask.
type syncWaiter struct {
	mask   uint
	target [transcriptShards]uint64
	done   chan struct{}
}

// synced returns a channel closed once everything added before the call
// is on disk (or failed), or the writer stopped; syncedFor, the same for
// the lines of one agent. A caller that stops waiting first calls forget;
// nothing else waits on its behalf.
func (w *transcriptWriter) synced() <-chan struct{} {
	return w.syncedShards(1<<transcriptShards - 1)
}

func (w *transcriptWriter) syncedFor(shard int) <-chan struct{} {
	return w.syncedShards(1 << shard)
}

func (w *transcriptWriter) syncedShards(mask uint) <-chan struct{} {
	s := syncWaiter{mask: mask, done: make(chan struct{})}
	for i := range w.shards {
		if mask&(1<<i) != 0 {
			sh := &w.shards[i]
			sh.mu.Lock()
			s.target[i] = sh.queued
			sh.mu.Unlock()
		}
	}
	w.waitMu.Lock()
	defer w.waitMu.Unlock()
	if w.reached(&s) || w.isStopped() {
		close(s.done)
		return s.done
	}
	w.waiters = append(w.waiters, s)
	return s.done
}

// reached reports whether written has passed s's targets; w.waitMu is
// held.
func (w *transcriptWriter) reached(s *syncWaiter) bool {
	for i, t := range s.target {
		if s.mask&(1<<i) != 0 && w.written[i] < t {
			return false
		}
	}
	return true
}

// forget drops the wait for done, which synced returned.
func (w *transcriptWriter) forget(done <-chan struct{}) {
	w.waitMu.Lock()
	defer w.waitMu.Unlock()
	w.waiters = slices.DeleteFunc(w.waiters, func(s syncWaiter) bool { return s.done == done })
}

// wakeWaiters closes the waits that written has passed, or all of them
// when the writer stops; w.waitMu is held.
func (w *transcriptWriter) wakeWaiters(all bool) {
	w.waiters = slices.DeleteFunc(w.waiters, func(s syncWaiter) bool {
		if all || w.reached(&s) {
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
	w.closing.Store(true)
	w.wakeAdders()
	w.idle.Store(false)
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.stopped
}

func (w *transcriptWriter) run() {
	defer func() {
		w.waitMu.Lock()
		close(w.stopped)
		w.wakeWaiters(true)
		w.waitMu.Unlock()
		w.wakeAdders()
	}()
	defer w.giveBufs()
	for {
		closing := w.closing.Load() // before the flush, so that the flush sees every line added before close
		if w.flush() {
			continue
		}
		if closing {
			if w.f != nil {
				_ = w.f.Close()
				w.f = nil
			}
			w.failed = true
			return
		}
		w.idle.Store(true)
		if w.waiting() || w.closing.Load() {
			w.idle.Store(false) // a token an adder sent meanwhile only wakes it once more
			continue
		}
		<-w.wake
	}
}

// shardBufs holds the shards' buffers of writers that stopped, for the
// next: a writer grows its shards' buffers and their spares to the size
// its run writes at, some MB in all, and a program that makes managers
// one after another (a server, a test suite) would grow them again for
// each, which the collector then pays for.
var shardBufs sync.Pool // of *[]byte

// takeBuf returns an empty buffer from pool, or nil.
func takeBuf(pool *sync.Pool) []byte {
	if p, _ := pool.Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return nil
}

// giveBuf puts b in pool, unless it is empty or larger than most.
func giveBuf(pool *sync.Pool, b []byte, most int) {
	if cap(b) > 0 && cap(b) <= most {
		pool.Put(&b)
	}
}

// giveBufs hands the buffers of a writer that stopped to the pools. No
// adder appends to a shard once the writer's last flush has taken it.
func (w *transcriptWriter) giveBufs() {
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		giveBuf(&shardBufs, sh.pending, maxShardKept)
		sh.pending = nil
		sh.mu.Unlock()
		giveBuf(&shardBufs, w.spare[i].text, maxShardKept)
		w.spare[i].text = nil
	}
}

// write appends lines with one write.
func (w *transcriptWriter) write(lines []byte) {
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
	if _, err := w.f.Write(lines); err != nil {
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
