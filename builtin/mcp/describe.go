package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on what a server describes.
const (
	maxTools       = 1000
	maxDescription = 16 << 10
	maxSchema      = 256 << 10
	maxCacheFile   = 64 << 20
)

// toolInfo is one tool as its server describes it, and as the cache
// keeps it.
type toolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// cacheFile is a server's description in the cache directory.
type cacheFile struct {
	Server string     `json:"server"`
	Tools  []toolInfo `json:"tools"`
}

// describe returns the server's tools: from memory, the cache, or the
// server itself, started for it.
func (s *server) describe(ctx context.Context) ([]toolInfo, error) {
	if infos, ok := s.cached(); ok {
		return infos, nil
	}
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	infos, err := listTools(ctx, sess.cs)
	if err != nil {
		return nil, fmt.Errorf("%s: listing its tools: %w", describe(s.entry), err)
	}
	s.mu.Lock()
	s.infos = infos
	s.mu.Unlock()
	if err := s.writeCache(infos); err != nil {
		s.pool.cfg.Logger.Warn("MCP description not cached", "server", s.entry.Name, "err", err)
	}
	return infos, nil
}

// cached returns the description held in memory or in the cache.
func (s *server) cached() ([]toolInfo, bool) {
	s.mu.Lock()
	infos := s.infos
	s.mu.Unlock()
	if infos != nil {
		return infos, true
	}
	infos, ok := s.readCache()
	if ok {
		s.mu.Lock()
		s.infos = infos
		s.mu.Unlock()
	}
	return infos, ok
}

func (s *server) cachePath() string {
	if s.pool.cfg.CacheDir == "" {
		return ""
	}
	return filepath.Join(s.pool.cfg.CacheDir, s.entry.Digest()+".json")
}

func (s *server) readCache() ([]toolInfo, bool) {
	path := s.cachePath()
	if path == "" {
		return nil, false
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var c cacheFile
	if err := json.NewDecoder(io.LimitReader(f, maxCacheFile)).Decode(&c); err != nil || c.Tools == nil {
		s.pool.cfg.Logger.Warn("MCP description cache unreadable; describing the server again", "path", path, "err", err)
		return nil, false
	}
	return c.Tools, true
}

// writeCache writes the description whole or not at all.
func (s *server) writeCache(infos []toolInfo) error {
	path := s.cachePath()
	if path == "" {
		return nil
	}
	data, err := json.Marshal(cacheFile{Server: s.entry.Name, Tools: infos})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".mcp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// listTools reads the server's whole tool list, bounded.
func listTools(ctx context.Context, cs *mcpsdk.ClientSession) ([]toolInfo, error) {
	infos := []toolInfo{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if len(infos) == maxTools {
			return nil, fmt.Errorf("it offers more than %d tools", maxTools)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: input schema: %v", t.Name, err)
		}
		if t.InputSchema == nil {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		if len(schema) > maxSchema {
			return nil, fmt.Errorf("tool %q: its input schema is %d bytes, past the %d troupe accepts", t.Name, len(schema), maxSchema)
		}
		desc := t.Description
		if len(desc) > maxDescription {
			desc = desc[:runeStart(desc, maxDescription)] + "…"
		}
		infos = append(infos, toolInfo{Name: t.Name, Description: desc, InputSchema: schema})
	}
	return infos, nil
}

// runeStart is the largest i <= n at which a rune of s starts.
func runeStart(s string, n int) int {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return n
}
