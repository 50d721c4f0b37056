//go:build unix

package manager_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/manager"
)

func TestReadTranscriptRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	folder := filepath.Join(dir, "dir.jsonl")
	require.NoError(t, os.Mkdir(folder, 0o700))
	for path, kind := range map[string]string{fifo: "named pipe", folder: "directory"} {
		done := make(chan error, 1)
		go func() {
			_, err := manager.ReadTranscript(path)
			done <- err
		}()
		select {
		case err := <-done:
			require.Error(t, err)
			assert.Contains(t, err.Error(), "not a regular file (a "+kind+")")
		case <-time.After(5 * time.Second):
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close() // let the stuck reader go; the test has failed
			}
			t.Fatalf("ReadTranscript hung on a %s", kind)
		}
	}
}

func TestReadTranscriptReadsAtMost64MiB(t *testing.T) {
	var b bytes.Buffer
	pad := bytes.Repeat([]byte("x"), 1000)
	for i := 1; b.Len() <= 64<<20; i++ {
		fmt.Fprintf(&b, `{"seq":%d,"kind":"note","text":"%s"}`+"\n", i, pad)
	}
	path := filepath.Join(t.TempDir(), "big.jsonl")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
	events, err := manager.ReadTranscript(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "only the first 64 MiB were read")
	assert.NotEmpty(t, events, "the events before the cut come back")
	assert.Less(t, len(events)*len(pad), 64<<20)
}
