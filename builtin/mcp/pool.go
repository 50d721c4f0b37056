package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Sentinel errors, for errors.Is.
var (
	// ErrUnknownServer is wrapped when a server is asked for by a name
	// the pool was not given.
	ErrUnknownServer = errors.New("unknown MCP server")
	// ErrStart is wrapped when a server cannot be started or fails the
	// MCP handshake.
	ErrStart = errors.New("MCP server did not start")
	// ErrDown is wrapped when a server's session broke: during a call,
	// or for good after it was restarted once.
	ErrDown = errors.New("MCP server is down")
	// ErrInvalidArguments is wrapped when a call's arguments do not
	// match the tool's input schema; the server is not called.
	ErrInvalidArguments = errors.New("invalid arguments")
	// ErrToolFailed is wrapped when the server reports that the tool
	// failed.
	ErrToolFailed = errors.New("MCP tool failed")
	// ErrClosed is wrapped when the pool is used after Close.
	ErrClosed = errors.New("MCP pool closed")
)

// Defaults of Config.
const (
	DefaultMaxResult    = 64 << 10
	DefaultStartTimeout = 30 * time.Second
)

// Config says which servers a Pool serves and how.
type Config struct {
	// Servers are the servers agents of the run may use; each must be
	// valid (agenttypes.MCPServer.Validate) and names must differ.
	Servers []agenttypes.MCPServer
	// CacheDir holds the servers' descriptions, keyed by their entries'
	// digests, so that a server seen before is listed without being
	// started. Empty, nothing is cached.
	CacheDir string
	// Environ is troupe's environment, where stdio servers' variables
	// come from (scrubbed) and ${VAR} is looked up; nil means
	// os.Environ().
	Environ []string
	// MaxResult bounds the text of a tool's result, in bytes; 0 means
	// DefaultMaxResult.
	MaxResult int
	// StartTimeout bounds a server's start and handshake; 0 means
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Logger gets starts, restarts and stops; nil discards them.
	Logger *slog.Logger
	// Connect, when set, makes the transport to a server instead of
	// starting its command or dialling its URL: for servers in this
	// process (tests, mcpsdk.NewInMemoryTransports).
	Connect func(ctx context.Context, s agenttypes.MCPServer) (mcpsdk.Transport, error)
}

// A Pool holds the MCP servers of one run: each is started on the first
// call that needs it and shared by every agent of the run until Close.
// It is safe for concurrent use.
type Pool struct {
	cfg     Config
	servers map[string]*server

	mu     sync.Mutex
	closed bool
}

// A Pool describes its servers' tools to a manager on demand.
var _ agenttypes.MCPToolSource = (*Pool)(nil)

// NewPool returns a pool of cfg's servers; it starts nothing.
func NewPool(cfg Config) (*Pool, error) {
	if cfg.Environ == nil {
		cfg.Environ = os.Environ()
	}
	if cfg.MaxResult <= 0 {
		cfg.MaxResult = DefaultMaxResult
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pool{cfg: cfg, servers: map[string]*server{}}
	for _, s := range cfg.Servers {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", describe(s), err)
		}
		if prev, ok := p.servers[s.Name]; ok {
			return nil, fmt.Errorf("%w: %s and %s share a name; rename one", agenttypes.ErrInvalid, describe(prev.entry), describe(s))
		}
		p.servers[s.Name] = &server{pool: p, entry: s, gate: make(chan struct{}, 1)}
	}
	return p, nil
}

// Servers returns the names of the pool's servers, sorted.
func (p *Pool) Servers() []string {
	return slices.Sorted(maps.Keys(p.servers))
}

// Tools returns the tools of the named server, named
// agenttypes.MCPToolName(server, tool). The description comes from the
// cache when the same entry was described before; otherwise the server
// is started (and stays up for the run) to list them.
func (p *Pool) Tools(ctx context.Context, name string) ([]agenttypes.Tool, error) {
	srv, err := p.server(name)
	if err != nil {
		return nil, err
	}
	infos, err := srv.describe(ctx)
	if err != nil {
		return nil, err
	}
	return srv.tools(infos), nil
}

// CachedTools returns the named server's tools as the cache describes
// them, starting nothing; false when the server was never described (or
// the pool has no cache directory).
func (p *Pool) CachedTools(name string) ([]agenttypes.Tool, bool) {
	srv, err := p.server(name)
	if err != nil {
		return nil, false
	}
	infos, ok := srv.cached()
	if !ok {
		return nil, false
	}
	return srv.tools(infos), true
}

func (p *Pool) server(name string) (*server, error) {
	srv, ok := p.servers[name]
	if !ok {
		known := p.Servers()
		if len(known) == 0 {
			return nil, fmt.Errorf("%w %q: no MCP server is declared; add it to .mcp.json or the configuration", ErrUnknownServer, name)
		}
		return nil, fmt.Errorf("%w %q: the servers declared are %s", ErrUnknownServer, name, strings.Join(known, ", "))
	}
	return srv, nil
}

func (p *Pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Close stops every server the pool started, waiting for each to end
// (or ctx to); calls after it fail with ErrClosed.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	var errs []error
	for _, name := range p.Servers() {
		errs = append(errs, p.servers[name].close(ctx))
	}
	return errors.Join(errs...)
}
