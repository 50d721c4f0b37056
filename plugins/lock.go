package plugins

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// Lock is the lock file: the SHA-256 of each plugin binary a project
// accepts. When a project has one, a plugin runs only if it is listed
// and its binary matches.
type Lock struct {
	// Version is the lock file's format, 1.
	Version int `json:"version"`
	// Plugins maps each plugin's name to its binary's checksum.
	Plugins map[string]LockEntry `json:"plugins"`
}

// LockEntry is one plugin of a Lock.
type LockEntry struct {
	SHA256 string `json:"sha256"`
}

// maxLockSize bounds what ReadLock reads.
const maxLockSize = 1 << 20

// isHexSHA256 reports whether s is a SHA-256 in lower-case hex.
func isHexSHA256(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ReadLock reads the lock file at path; it returns nil and no error when
// there is none.
func ReadLock(path string) (*Lock, error) {
	f, fi, err := fsroot.OpenRegular(nil, path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, fsroot.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %s is a %s, not a lock file; remove it and write the lock file again", ErrLockFile, path, fsroot.Kind(fi.Mode()))
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLockSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxLockSize {
		return nil, fmt.Errorf("%w: %s is over %d bytes; write it again", ErrLockFile, path, maxLockSize)
	}
	var l Lock
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("%w: %s: %v; write it again", ErrLockFile, path, err)
	}
	for name, e := range l.Plugins {
		if !isHexSHA256(e.SHA256) {
			return nil, fmt.Errorf("%w: %s: plugin %q has checksum %q, not 64 hex digits; write it again", ErrLockFile, path, name, e.SHA256)
		}
	}
	if l.Plugins == nil {
		l.Plugins = map[string]LockEntry{}
	}
	return &l, nil
}

// WriteLock writes a lock file at path listing bins with their current
// checksums, replacing any there.
func WriteLock(path string, bins []Binary) (*Lock, error) {
	l := &Lock{Version: 1, Plugins: map[string]LockEntry{}}
	for _, b := range bins {
		sum, err := Checksum(b.Path)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", b.Name, err)
		}
		l.Plugins[b.Name] = LockEntry{SHA256: sum}
	}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plugins.lock.*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return nil, err
	}
	return l, os.Rename(tmp.Name(), path)
}
