//go:build linux

package process_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/process"
)

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// later is a clock past the racy age of every file just written.
func later() time.Time { return time.Now().Add(process.RacyAge + time.Second) }

// remember opens path and remembers its checksum, as a caller does once
// the checksum passed.
func remember(t *testing.T, d process.Digests, path string) string {
	t.Helper()
	im, err := d.Open(path)
	require.NoError(t, err)
	defer im.Close()
	d.Remember(im)
	return im.SHA256
}

// memoFiles are the memos in dir.
func memoFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	return files
}

// forge rewrites every memo in dir to name another checksum: a memo that
// is used shows it.
func forge(t *testing.T, dir, sum string) {
	t.Helper()
	files := memoFiles(t, dir)
	require.Len(t, files, 1)
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // the identity's numbers are past a float's precision
	require.NoError(t, dec.Decode(&m))
	m["sha256"] = sum
	b, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(files[0], b, 0o600))
}

func ctimeOf(t *testing.T, path string) syscall.Timespec {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	return st.Ctim
}

func TestDigestsTakeAnUnchangedFilesChecksumFromTheMemo(t *testing.T) {
	dir, memo := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "tool")
	body := script(t, path, "checked")
	d := process.DigestsAt(memo, later)
	sum, err := d.Checksum(path)
	require.NoError(t, err)
	assert.Equal(t, hexSum(body), sum)
	assert.Empty(t, memoFiles(t, memo), "a checksum is remembered only when the caller says it passed")
	assert.Equal(t, hexSum(body), remember(t, d, path))

	forged := hexSum([]byte("not read again"))
	forge(t, memo, forged)
	sum, err = d.Checksum(path)
	require.NoError(t, err)
	assert.Equal(t, forged, sum, "the unchanged file is not read again")
	im, err := d.Open(path)
	require.NoError(t, err)
	defer im.Close()
	assert.Equal(t, forged, im.SHA256)
	out, err := im.Command().Output()
	require.NoError(t, err)
	assert.Equal(t, "checked\n", string(out), "the image runs the file whose identity was read")
	memos := memoFiles(t, memo)
	fi, err := os.Stat(memos[0])
	require.NoError(t, err)
	d.Remember(im)
	again, err := os.Stat(memos[0])
	require.NoError(t, err)
	assert.Equal(t, fi.ModTime(), again.ModTime(), "a checksum taken from the memo is not written again")

	sum, err = process.Digests{}.Checksum(path)
	require.NoError(t, err)
	assert.Equal(t, hexSum(body), sum, "without a memo directory every call hashes")
}

// A binary put in place of the one remembered is hashed anew, however
// much of its identity it copies: renamed in with the same size and
// modification time, or written over the old one's bytes in place with
// the modification time set back.
func TestDigestsHashAFileSwappedInPlace(t *testing.T) {
	for _, how := range []string{"renamed in", "rewritten in place"} {
		t.Run(how, func(t *testing.T) {
			dir, memo := t.TempDir(), t.TempDir()
			path := filepath.Join(dir, "tool")
			script(t, path, "checked")
			fi, err := os.Stat(path)
			require.NoError(t, err)
			d := process.DigestsAt(memo, later)
			remember(t, d, path)
			require.Len(t, memoFiles(t, memo), 1)

			var body []byte
			if how == "renamed in" {
				other := filepath.Join(dir, "other")
				body = script(t, other, "swapped")
				require.NoError(t, os.Chtimes(other, fi.ModTime(), fi.ModTime()))
				require.NoError(t, os.Rename(other, path))
			} else {
				// Rewrite until the change time moves on: a change within
				// the same tick of the file system's clock is the one the
				// racy age keeps out of the memo.
				before := ctimeOf(t, path)
				for ctimeOf(t, path) == before {
					body = script(t, path, "swapped")
					require.NoError(t, os.Chtimes(path, fi.ModTime(), fi.ModTime()))
				}
			}
			now, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, fi.Size(), now.Size())
			require.Equal(t, fi.ModTime(), now.ModTime())

			sum, err := d.Checksum(path)
			require.NoError(t, err)
			assert.Equal(t, hexSum(body), sum)
			im, err := d.Open(path)
			require.NoError(t, err)
			defer im.Close()
			assert.Equal(t, hexSum(body), im.SHA256)
		})
	}
}

func TestDigestsRememberNoFileThatChangedJustNow(t *testing.T) {
	dir, memo := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "tool")
	body := script(t, path, "fresh")
	d := process.DigestsAt(memo, time.Now)
	assert.Equal(t, hexSum(body), remember(t, d, path))
	assert.Empty(t, memoFiles(t, memo), "a change within the racy age could still be followed by one in the same tick")
}

// What counts is how long before it was hashed the file last changed,
// not before it was remembered: a plugin is hashed as it is loaded and
// remembered as it first starts, often seconds later.
func TestDigestsRememberNoFileThatChangedJustBeforeItWasHashed(t *testing.T) {
	dir, memo := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "tool")
	body := script(t, path, "fresh")
	im, err := process.DigestsAt(memo, time.Now).Open(path) // hashed right after the write
	require.NoError(t, err)
	defer im.Close()
	assert.Equal(t, hexSum(body), im.SHA256)
	process.DigestsAt(memo, later).Remember(im) // the plugin starts seconds later
	assert.Empty(t, memoFiles(t, memo), "the file was within the racy age of its last change when it was hashed")
}

func TestDigestsIgnoreAMemoOfAnotherPath(t *testing.T) {
	dir, memo := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	script(t, a, "a")
	body := script(t, b, "b")
	d := process.DigestsAt(memo, later)
	remember(t, d, a)
	files := memoFiles(t, memo)
	require.Len(t, files, 1)
	// b's memo file holding a's memo (a copy, or a link) is not b's.
	remember(t, d, b)
	for _, f := range memoFiles(t, memo) {
		if f != files[0] {
			data, err := os.ReadFile(files[0])
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(f, data, 0o600))
		}
	}
	sum, err := d.Checksum(b)
	require.NoError(t, err)
	assert.Equal(t, hexSum(body), sum)
}
