package mcp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-dev/troupe/agenttypes"
)

// clientInfo is how troupe introduces itself in the handshake.
var clientInfo = &mcpsdk.Implementation{Name: "troupe", Version: "1"}

// A server is one entry of the pool and its session, if started.
type server struct {
	pool  *Pool
	entry agenttypes.MCPServer
	// gate is held while the session is started or stopped, so that
	// concurrent first calls share one start and waiting honours ctx.
	gate chan struct{}

	mu     sync.Mutex
	live   *session
	breaks int   // sessions that broke this run
	failed error // why the server is not started again
	infos  []toolInfo
}

// A session is a started server.
type session struct {
	cs   *mcpsdk.ClientSession
	proc *stdioProcess // nil unless the pool started a stdio server
	// release frees what the transport holds once the session ended.
	release func()
	done    chan struct{} // closed when the session's connection ends
	broken  atomic.Bool   // set when a call saw the connection fail
}

func (ss *session) isBroken() bool {
	if ss.broken.Load() {
		return true
	}
	select {
	case <-ss.done:
		return true
	default:
		return false
	}
}

func (s *server) lock(ctx context.Context) error {
	select {
	case s.gate <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *server) unlock() { <-s.gate }

// session returns the server's live session, starting the server when
// it has none and restarting it once when its session broke.
func (s *server) session(ctx context.Context) (*session, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.unlock()
	if s.pool.isClosed() {
		return nil, fmt.Errorf("%w: %s is not started again", ErrClosed, describe(s.entry))
	}
	s.mu.Lock()
	live, failed := s.live, s.failed
	s.mu.Unlock()
	if failed != nil {
		return nil, failed
	}
	if live != nil && !live.isBroken() {
		return live, nil
	}
	if live != nil {
		live.stop(ctx)
		s.mu.Lock()
		s.live = nil
		s.breaks++
		if s.breaks > 1 {
			s.failed = fmt.Errorf("%w: %s stopped twice in this run and is not started again; its tools are unavailable until the next run", ErrDown, describe(s.entry))
		}
		failed = s.failed
		s.mu.Unlock()
		if failed != nil {
			return nil, failed
		}
		s.pool.cfg.Logger.Warn("MCP server stopped; starting it again", "server", s.entry.Name)
	}
	sess, err := s.start(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.mu.Lock()
			s.failed = err
			s.mu.Unlock()
		}
		return nil, err
	}
	s.mu.Lock()
	s.live = sess
	s.mu.Unlock()
	return sess, nil
}

// start starts the server and makes the MCP handshake, within the
// pool's start timeout.
func (s *server) start(ctx context.Context) (*session, error) {
	cfg := &s.pool.cfg
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	sess := &session{done: make(chan struct{})}
	var transport mcpsdk.Transport
	var err error
	switch {
	case cfg.Connect != nil:
		transport, err = cfg.Connect(ctx, s.entry)
	case s.entry.Transport() == agenttypes.MCPHTTP:
		transport, sess.release, err = httpTransport(s.entry, cfg.Environ)
	default:
		sess.proc, err = startStdio(s.entry, cfg.Environ)
		if err == nil {
			transport = sess.proc.transport()
		}
	}
	if err != nil {
		if errors.Is(err, ErrStart) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrStart, describe(s.entry), err)
	}
	client := mcpsdk.NewClient(clientInfo, &mcpsdk.ClientOptions{Capabilities: &mcpsdk.ClientCapabilities{}})
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		if sess.release != nil {
			sess.release()
		}
		if sess.proc != nil {
			sess.proc.stop(context.WithoutCancel(ctx))
			err = fmt.Errorf("%v%s", err, sess.proc.stderrTail())
		}
		return nil, fmt.Errorf("%w: %s: the MCP handshake failed: %v; check that the command serves MCP over its standard input and output", ErrStart, describe(s.entry), err)
	}
	sess.cs = cs
	go func() {
		_ = cs.Wait()
		close(sess.done)
	}()
	cfg.Logger.Info("MCP server started", "server", s.entry.Name, "source", s.entry.Source)
	return sess, nil
}

// stop ends the session and, for a stdio server, its process tree.
func (ss *session) stop(ctx context.Context) {
	_ = ss.cs.Close()
	<-ss.done
	if ss.release != nil {
		ss.release()
	}
	if ss.proc != nil {
		ss.proc.stop(ctx)
	}
}

// close stops the server's session, if any.
func (s *server) close(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("%s: not stopped: %w", describe(s.entry), err)
	}
	defer s.unlock()
	s.mu.Lock()
	live := s.live
	s.live = nil
	s.mu.Unlock()
	if live != nil {
		live.stop(ctx)
		s.pool.cfg.Logger.Info("MCP server stopped", "server", s.entry.Name)
	}
	return nil
}
