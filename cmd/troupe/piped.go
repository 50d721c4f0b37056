package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// pipedSession sits between a stdio MCP session and its streams, and
// keeps the session's input open after the client's end has closed
// until every request read from it has been answered: a client that
// pipes its requests and closes its end (printf ... | troupe mcp serve)
// gets every answer, where the session would otherwise end at the end of
// its input with the requests in flight unanswered. The bytes pass
// through unchanged; only whole lines (JSON-RPC messages, one a line)
// are looked at, each at most maxPipedLine bytes.
type pipedSession struct {
	ctx context.Context
	in  io.Reader
	out io.Writer

	mu      sync.Mutex
	pending map[string]bool // the IDs of requests read and not answered
	settled chan struct{}   // closed and renewed when pending empties
	inLine  lineSplitter
	outLine lineSplitter
}

// maxPipedLine bounds a message that is looked at; a longer one passes
// through unlooked at (a request in it is not waited for).
const maxPipedLine = 16 << 20

func newPipedSession(ctx context.Context, in io.Reader, out io.Writer) *pipedSession {
	return &pipedSession{ctx: ctx, in: in, out: out, pending: map[string]bool{}, settled: make(chan struct{})}
}

// Read reads the client's input; at its end, it waits for the answers
// still owed (or ctx) before it says so.
func (p *pipedSession) Read(b []byte) (int, error) {
	n, err := p.in.Read(b)
	if n > 0 {
		p.mu.Lock()
		p.inLine.feed(b[:n], p.requestRead)
		p.mu.Unlock()
	}
	if errors.Is(err, io.EOF) {
		p.waitSettled()
	}
	return n, err
}

// Write writes to the client, noting the answers it carries.
func (p *pipedSession) Write(b []byte) (int, error) {
	n, err := p.out.Write(b)
	p.mu.Lock()
	p.outLine.feed(b[:n], p.answerWritten)
	p.mu.Unlock()
	return n, err
}

func (p *pipedSession) Close() error { return nil }

func (p *pipedSession) waitSettled() {
	for {
		p.mu.Lock()
		if len(p.pending) == 0 {
			p.mu.Unlock()
			return
		}
		settled := p.settled
		p.mu.Unlock()
		select {
		case <-settled:
		case <-p.ctx.Done():
			return
		}
	}
}

// requestRead notes a request (a message with a method and an ID) the
// client sent; p.mu is held.
func (p *pipedSession) requestRead(line []byte) {
	for _, m := range messages(line) {
		if m.Method != "" && m.ID != "" {
			p.pending[m.ID] = true
		}
	}
}

// answerWritten notes an answer (a message with an ID and no method);
// p.mu is held.
func (p *pipedSession) answerWritten(line []byte) {
	for _, m := range messages(line) {
		if m.Method == "" && m.ID != "" && p.pending[m.ID] {
			delete(p.pending, m.ID)
			if len(p.pending) == 0 {
				close(p.settled)
				p.settled = make(chan struct{})
			}
		}
	}
}

type rpcMessage struct {
	ID     string // the ID's JSON, made canonical; "" for none
	Method string
}

// messages reads the JSON-RPC messages of a line: one, or a batch.
func messages(line []byte) []rpcMessage {
	type raw struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	var batch []raw
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		if json.Unmarshal(line, &batch) != nil {
			return nil
		}
	} else {
		var one raw
		if json.Unmarshal(line, &one) != nil {
			return nil
		}
		batch = []raw{one}
	}
	out := make([]rpcMessage, 0, len(batch))
	for _, m := range batch {
		out = append(out, rpcMessage{ID: canonicalID(m.ID), Method: m.Method})
	}
	return out
}

// canonicalID is an ID as a key that a request and its answer share
// however each spells it (3 and 3.0, or a string's escapes).
func canonicalID(id json.RawMessage) string {
	var v any
	if len(id) == 0 || json.Unmarshal(id, &v) != nil || v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// lineSplitter hands on the whole lines of a stream fed in pieces,
// dropping (not handing on) a line longer than maxPipedLine.
type lineSplitter struct {
	buf  []byte
	over bool // in a line too long to keep
}

func (s *lineSplitter) feed(b []byte, line func([]byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.keep(b)
			return
		}
		s.keep(b[:i])
		if !s.over {
			line(s.buf)
		}
		s.buf, s.over = s.buf[:0], false
		b = b[i+1:]
	}
}

func (s *lineSplitter) keep(b []byte) {
	if s.over || len(s.buf)+len(b) > maxPipedLine {
		s.buf, s.over = s.buf[:0], true
		return
	}
	s.buf = append(s.buf, b...)
}
