package process

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// Digests remembers the checksums of executables by the identity of
// their files, so that an executable checked at every command (a
// project's plugin, whose trust is pinned to its checksum) is read and
// hashed again only when its file changed, not at every start.
//
// A file's identity is its device and inode number, its size, and its
// modification and change times to the nanosecond, all read from the
// descriptor that is then hashed or run. Whatever replaces the bytes
// changes one of them: a file renamed into the path is another inode, or
// a reused inode number with a change time of its own; rewriting the file
// in place sets its change time, which, unlike the modification time, no
// program can set back. The one gap, a change within the same tick of
// the file system's clock as the change before it, is closed by
// remembering only files whose last change is a while in the past
// (racyAge). Where no such identity can be read, nothing is remembered.
//
// The memo lives in the user's own state directory beside their consent:
// who can write it can already write what they trusted.
type Digests struct {
	// Dir holds one small file per executable. Empty: every call hashes.
	Dir string

	now func() time.Time // time.Now, unless a test says otherwise
}

// racyAge is how long ago a file must have last changed for its checksum
// to be remembered: longer than any file system's timestamp tick.
const racyAge = 2 * time.Second

// maxMemo bounds what is read of one memo file.
const maxMemo = 4 << 10

// A memo is what is remembered of one executable.
type memo struct {
	Path   string   `json:"path"`
	ID     identity `json:"id"`
	SHA256 string   `json:"sha256"`
}

// An identity is what changes when a file's bytes may have.
type identity struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime_ns"`
	Ctime int64  `json:"ctime_ns"`
}

// Open is Open, taking the checksum from the memo when the file is the
// one remembered; the image runs the very file whose identity was read.
// It remembers nothing: see Remember.
func (d Digests) Open(path string) (*Image, error) {
	// Read before the descriptor's times: a change the file's times do
	// not show yet can only come after this moment.
	opened := d.clock()
	f, fi, err := openExecutable(path)
	if err != nil {
		return nil, err
	}
	if sum, ok := d.recall(path, fi); ok {
		if im, ok := knownImage(f, path, sum); ok {
			im.recalled = true
			return im, nil
		}
	}
	im, err := openImage(f, path) // takes f
	if err != nil {
		return nil, err
	}
	im.info, im.opened = fi, opened
	return im, nil
}

// Checksum is Checksum, taking it from the memo when the file is the
// one remembered. It remembers nothing.
func (d Digests) Checksum(path string) (string, error) {
	f, fi, err := openExecutable(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if sum, ok := d.recall(path, fi); ok {
		return sum, nil
	}
	return copyBytes(io.Discard, f, path)
}

// Remember keeps the checksum of im, an image Open hashed, for the file
// it was read from as it was then: call it once the checksum has passed
// whatever it was checked against, so that a binary that was refused
// leaves nothing behind. An image whose checksum came from the memo, or
// whose file had changed too recently when Open read it (see Digests),
// is not written again.
func (d Digests) Remember(im *Image) {
	if im.recalled || im.info == nil {
		return
	}
	d.remember(im.Path, im.info, im.opened, im.SHA256)
}

// clock is the time now.
func (d Digests) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

// memoFile is where the memo of the executable at path is kept.
func (d Digests) memoFile(path string) (string, string, bool) {
	if d.Dir == "" {
		return "", "", false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", false
	}
	key := sha256.Sum256([]byte(abs))
	return abs, filepath.Join(d.Dir, hex.EncodeToString(key[:16])+".json"), true
}

// recall returns the remembered checksum of the open file fi at path, if
// it is the file remembered.
func (d Digests) recall(path string, fi os.FileInfo) (string, bool) {
	id, ok := identityOf(fi)
	if !ok {
		return "", false
	}
	abs, file, ok := d.memoFile(path)
	if !ok {
		return "", false
	}
	f, mfi, err := fsroot.OpenRegular(nil, file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if mfi.Size() > maxMemo {
		return "", false
	}
	var m memo
	if err := json.NewDecoder(io.LimitReader(f, maxMemo)).Decode(&m); err != nil {
		return "", false
	}
	if m.Path != abs || m.ID != id || len(m.SHA256) != 2*sha256.Size {
		return "", false
	}
	return m.SHA256, true
}

// remember keeps sum as the checksum of the file fi at path, unless the
// file had changed too recently when it was opened, at opened, to be
// told apart from a change that followed in the same tick: measured from
// any later moment, such a file would pass. A memo that cannot be
// written costs a hash next time, nothing more. fi must be what the
// descriptor that was hashed said, never a later look at the path, which
// may name another file by then.
func (d Digests) remember(path string, fi os.FileInfo, opened time.Time, sum string) {
	id, ok := identityOf(fi)
	if !ok || opened.Sub(time.Unix(0, id.Ctime)) < racyAge {
		return
	}
	abs, file, ok := d.memoFile(path)
	if !ok {
		return
	}
	b, err := json.Marshal(memo{Path: abs, ID: id, SHA256: sum})
	if err != nil || os.MkdirAll(d.Dir, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(d.Dir, ".memo.*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), file)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
	}
}
