package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/troupe-dev/troupe/builtin/fsroot"

	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// What a plugin offers is kept on disk under Config.CacheDir, one file
// per binary, so that learning it does not start the plugin: a command
// that lists types starts no plugin whose binary it has seen before, and a
// plugin's process starts when an agent first uses it. A binary is known
// by its path, size and modification time (hashing a binary of many
// megabytes at every command would cost more than some plugins take to
// start); a rebuilt or replaced binary differs in one of them and
// describes itself anew. The cache decides nothing about trust: a
// description is only a list of names, the process describes itself again
// when it starts, and the lock file's checksum is checked then as always.

// cacheKey names p's binary, as discovered, in the description cache.
func (p *proc) cacheKey() string {
	abs, err := filepath.Abs(p.bin.Path)
	if err != nil || p.stamp == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(abs + "\x00" + p.stamp))
	return hex.EncodeToString(sum[:])
}

// maxCachedDescription bounds what is read back from the cache.
const maxCachedDescription = 4 << 20

// cachedDescription returns the description stored under key, or nil.
func (h *Host) cachedDescription(key string) *pluginv1.DescribeResponse {
	if h.cfg.CacheDir == "" || key == "" {
		return nil
	}
	f, fi, err := fsroot.OpenRegular(nil, filepath.Join(h.cfg.CacheDir, key+".pb"))
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi.Size() > maxCachedDescription {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCachedDescription+1))
	if err != nil || len(b) > maxCachedDescription {
		return nil
	}
	d := &pluginv1.DescribeResponse{}
	if proto.Unmarshal(b, d) != nil || wire.Check(d, wire.Version) != nil {
		return nil
	}
	return d
}

// storeDescription keeps d under key. A cache that cannot be written
// costs a start next time, nothing more.
func (h *Host) storeDescription(key string, d *pluginv1.DescribeResponse) {
	if h.cfg.CacheDir == "" || key == "" {
		return
	}
	if err := writeDescription(h.cfg.CacheDir, key, d); err != nil {
		h.cfg.Logger.Debug("plugin description not cached", "dir", h.cfg.CacheDir, "err", err)
	}
}

func writeDescription(dir, key string, d *pluginv1.DescribeResponse) error {
	b, err := proto.Marshal(d)
	if err != nil {
		return err
	}
	if len(b) > maxCachedDescription {
		return fmt.Errorf("description of %d bytes is too large to cache", len(b))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, key+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(dir, key+".pb"))
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
	}
	return werr
}
