package plugins

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	pluginv1 "github.com/troupe-dev/troupe/plugins/proto/troupe/plugin/v1"
	"github.com/troupe-dev/troupe/plugins/protocol"
)

// What a plugin offers is kept on disk under Config.CacheDir, one file
// per binary named by the binary's SHA-256, so that learning it does not
// start the plugin: a command that lists types starts no plugin whose
// binary it has seen before, and a plugin's process starts when an agent
// first uses it. A description is only ever what that exact binary said
// of itself; the process, when it starts, describes itself again, and the
// lock file is checked then as always.

// maxCachedDescription bounds what is read back from the cache.
const maxCachedDescription = 4 << 20

// cachedDescription returns the description stored for the binary with
// checksum sum, or nil.
func (h *Host) cachedDescription(sum string) *pluginv1.DescribeResponse {
	if h.cfg.CacheDir == "" || sum == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(h.cfg.CacheDir, sum+".pb"))
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxCachedDescription {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCachedDescription+1))
	if err != nil || len(b) > maxCachedDescription {
		return nil
	}
	d := &pluginv1.DescribeResponse{}
	if proto.Unmarshal(b, d) != nil || protocol.Check(d, protocol.Version) != nil {
		return nil
	}
	return d
}

// storeDescription keeps d for the binary with checksum sum. A cache
// that cannot be written costs a start next time, nothing more.
func (h *Host) storeDescription(sum string, d *pluginv1.DescribeResponse) {
	if h.cfg.CacheDir == "" || sum == "" {
		return
	}
	if err := writeDescription(h.cfg.CacheDir, sum, d); err != nil {
		h.cfg.Logger.Debug("plugin description not cached", "dir", h.cfg.CacheDir, "err", err)
	}
}

func writeDescription(dir, sum string, d *pluginv1.DescribeResponse) error {
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
	tmp, err := os.CreateTemp(dir, sum+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(dir, sum+".pb"))
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
	}
	return werr
}
