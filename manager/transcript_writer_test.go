package manager

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The writer under many adders, with backpressure, and
// close racing the last adds: every line added before close is written
// whole, each adder's lines in order; synced never hangs; adds after
// close are dropped.
func TestTranscriptWriterOrderAndLoss(t *testing.T) {
	for round := range 5 {
		path := filepath.Join(t.TempDir(), "run.jsonl")
		w := newTranscriptWriter(path, slog.New(slog.DiscardHandler))
		const adders, each = 8, 2000
		big := strings.Repeat("x", 700)
		var wg sync.WaitGroup
		var addedMu sync.Mutex
		added := map[string]uint64{} // last seq added per adder before closing was seen
		start := make(chan struct{})
		for i := range adders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				id := fmt.Sprint("a", i)
				for n := range uint64(each) {
					w.add(&Event{Seq: n + 1, AgentID: id, Text: big})
					closing := w.closing.Load()
					if !closing {
						addedMu.Lock()
						added[id] = n + 1
						addedMu.Unlock()
					}
					if n%500 == 0 {
						select {
						case <-w.synced():
						case <-time.After(5 * time.Second):
							t.Error("synced never closed")
						}
					}
				}
			}()
		}
		close(start)
		time.Sleep(time.Duration(round) * 5 * time.Millisecond)
		w.close()
		wg.Wait()
		<-w.synced()
		w.add(&Event{Seq: 1 << 40, AgentID: "late"})
		events, err := ReadTranscript(path)
		if errors.Is(err, fs.ErrNotExist) {
			require.Empty(t, added, "lines were added before close, and no file was written")
			continue
		}
		require.NoError(t, err)
		last := map[string]uint64{}
		for _, e := range events {
			require.Equal(t, last[e.AgentID]+1, e.Seq, "adder %s: lines in order, none lost", e.AgentID)
			last[e.AgentID] = e.Seq
		}
		for id, n := range added {
			assert.GreaterOrEqual(t, last[id], n, "adder %s: every line added before close is on disk", id)
		}
		assert.NotContains(t, last, "late")
	}
}

func TestTranscriptWriteErrorNeverBlocks(t *testing.T) {
	// A transcript that cannot be opened, and one on a full disk (every
	// write fails with ENOSPC): the run goes on, and the failure is
	// logged once, not once per batch.
	for name, path := range map[string]string{"cannot open": "/dev/null/not/a/dir/run.jsonl", "disk full": "/dev/full"} {
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(path); name == "disk full" && err != nil {
				t.Skip("no /dev/full here")
			}
			var logs bytes.Buffer
			var logMu sync.Mutex
			w := newTranscriptWriter(path, slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil)))
			big := strings.Repeat("y", 4096)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for n := range 2000 { // 8 MiB: past the backpressure bound
					w.add(&Event{Seq: uint64(n), AgentID: "a", Text: big})
				}
				<-w.synced()
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("adds or synced blocked on a failing disk")
			}
			w.close()
			logMu.Lock()
			defer logMu.Unlock()
			assert.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), logs.String())
			assert.Contains(t, logs.String(), "the run goes on")
		})
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Events one of which happened before the next (a parent's spawn, then
// its child's), whatever the buffers their agents' lines go to, are on
// disk in that order: here one goroutine adds every event, so the whole
// file must be in Seq order.
func TestTranscriptKeepsTheOrderEventsHappenedIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w := newTranscriptWriter(path, slog.New(slog.DiscardHandler))
	const agents, each = 16, 1000
	shards := map[int]bool{}
	for i := range agents {
		shards[shardOf(fmt.Sprint("agent-", i))] = true
	}
	require.Greater(t, len(shards), 1, "the agents' lines go to more than one buffer")
	for n := range agents * each {
		w.add(&Event{Seq: uint64(n + 1), AgentID: fmt.Sprint("agent-", n%agents), Text: "step"})
	}
	w.close()
	events, err := ReadTranscript(path)
	require.NoError(t, err)
	require.Len(t, events, agents*each)
	for i, e := range events {
		require.Equal(t, uint64(i+1), e.Seq, "line %d", i+1)
	}
}

// Writers that stop hand their buffers to the writers that start: with
// several at once, some stopping while others add, adders still adding
// as their writer closes, and a writer that cannot open its file, each
// file holds its own writer's lines alone, each adder's in order, none
// lost of those added before close began.
func TestWritersThatReuseBuffersWriteTheirOwnLines(t *testing.T) {
	const writers, adders, each, rounds = 6, 3, 400, 3
	dir := t.TempDir()
	notADir := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(notADir, nil, 0o600))
	var all sync.WaitGroup
	for wi := range writers {
		all.Go(func() {
			path := filepath.Join(dir, fmt.Sprint(wi, ".jsonl"))
			if wi == 0 {
				path = filepath.Join(notADir, "run.jsonl") // fails: its lines are dropped
			}
			text := strings.Repeat(fmt.Sprint(wi), 300)
			for round := range rounds { // the later rounds take what stopped writers gave
				w := newTranscriptWriter(path, slog.New(slog.DiscardHandler))
				var wg sync.WaitGroup
				for a := range adders {
					wg.Go(func() {
						for n := range uint64(each) {
							w.add(&Event{Seq: uint64(round*each) + n + 1, AgentID: fmt.Sprint("w", wi, "a", a), Text: text})
						}
					})
				}
				wg.Wait()
				// One more adder goes on adding while the writer closes,
				// and after.
				closed := make(chan struct{})
				late := make(chan struct{})
				go func() {
					defer close(late)
					for n := uint64(1); ; n++ {
						w.add(&Event{Seq: uint64(round)<<32 + n, AgentID: fmt.Sprint("w", wi, "late"), Text: text})
						select {
						case <-closed:
							if n%64 == 0 {
								return
							}
						default:
						}
					}
				}()
				w.close()
				close(closed)
				<-late
			}
		})
	}
	all.Wait()
	for wi := 1; wi < writers; wi++ {
		events, err := ReadTranscript(filepath.Join(dir, fmt.Sprint(wi, ".jsonl")))
		require.NoError(t, err)
		last := map[string]uint64{}
		mains := 0
		for _, e := range events {
			require.True(t, strings.HasPrefix(e.AgentID, fmt.Sprint("w", wi)), "writer %d's file holds %s's line", wi, e.AgentID)
			require.Equal(t, strings.Repeat(fmt.Sprint(wi), 300), e.Text, "writer %d's file holds another's text", wi)
			if strings.HasSuffix(e.AgentID, "late") {
				require.Greater(t, e.Seq, last[e.AgentID], "%s: lines in order", e.AgentID)
			} else {
				require.Equal(t, last[e.AgentID]+1, e.Seq, "%s: lines in order, none lost", e.AgentID)
				mains++
			}
			last[e.AgentID] = e.Seq
		}
		require.Equal(t, rounds*adders*each, mains, "writer %d lost lines added before close", wi)
	}
}

// A flush of several chunks' worth of lines, one of them longer than a
// chunk, from every shard: each write is of whole lines, at most a chunk
// unless it is one line; together they hold every line in Seq order
// across the shards, as one merge into one buffer would have written
// them; and the chunk kept for the next flush is the chunk.
func TestAFlushOfManyChunksWritesWholeLinesInSeqOrder(t *testing.T) {
	var took [transcriptShards]shardLines
	var want bytes.Buffer
	for seq := uint64(1); want.Len() < 5*writeChunk; seq++ {
		size := 1 + int(seq*7919%3000)
		if seq == 40 {
			size = 2*writeChunk + 17 // a line of its own, longer than a chunk
		}
		line := fmt.Sprintf("%d %s\n", seq, strings.Repeat("x", size))
		want.WriteString(line)
		sh := &took[seq*2654435761%transcriptShards]
		sh.text = append(sh.text, line...)
		sh.lines = append(sh.lines, lineEnd{end: len(sh.text), seq: seq})
	}
	var got bytes.Buffer
	writes := 0
	chunk := mergeChunks(make([]byte, 0, writeChunk), &took, func(b []byte) {
		writes++
		require.NotEmpty(t, b, "write %d", writes)
		require.Equal(t, byte('\n'), b[len(b)-1], "write %d ends inside a line", writes)
		if len(b) > writeChunk {
			require.Equal(t, 1, bytes.Count(b, []byte("\n")), "write %d is over a chunk and not one line", writes)
		}
		got.Write(b)
	})
	require.GreaterOrEqual(t, writes, 4, "the flush went in chunks")
	require.Equal(t, want.Len(), got.Len(), "bytes written")
	require.True(t, bytes.Equal(want.Bytes(), got.Bytes()), "the lines, whole and in Seq order")
	assert.Equal(t, writeChunk, cap(chunk), "the long line's buffer is not kept")
	assert.Empty(t, chunk)
}
