package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/google/uuid"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-dev/troupe/manager"
)

// answerField names the one field of the form a question asks the user
// to fill in.
const answerField = "answer"

// maxTreeDepth bounds the walk from an agent up to its run's top agent.
const maxTreeDepth = 64

// AskUser answers a child's question for the user (set it as the
// manager's Config.AskUser): the client whose call started the child's
// tree is asked with an elicitation, if it takes them. A question of a
// tree no client waits on, or for a client that takes no elicitations,
// or that the user declines, is answered "" (nobody answered).
func (s *Server) AskUser(ctx context.Context, q manager.QuestionInfo) (string, error) {
	c := s.callOf(ctx, s.rootOf(q.From))
	if c == nil {
		return "", nil
	}
	root := c.agent.ID()
	c.mu.Lock()
	session, elicits, rounds := c.session, c.elicits, c.rounds
	c.mu.Unlock()
	if !elicits {
		return "", nil
	}
	params := elicitation(q)
	if !rounds {
		// The client takes requests from the server while it waits.
		res, err := session.Elicit(ctx, params)
		if err != nil {
			s.cfg.Logger.Info("mcp elicitation failed; the question goes unanswered", "run", root, "err", err)
			return "", nil
		}
		return answerOf(res), nil
	}
	// The question goes back as the result of the round in progress (or
	// the next); the client calls again with the answer.
	qs := &question{id: uuid.NewString(), params: params, answer: make(chan string, 1)}
	select {
	case c.asks <- qs:
	case <-ctx.Done():
		return "", nil
	case <-c.agent.Done():
		return "", nil
	}
	select {
	case text := <-qs.answer:
		return text, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.waiting, qs.id)
		c.mu.Unlock()
		return "", nil
	}
}

// callOf is the call whose run is root: a call tracked already, or one
// whose spawn is returning (its agent may ask before it is tracked).
func (s *Server) callOf(ctx context.Context, root string) *call {
	for {
		s.mu.Lock()
		c, spawning, changed := s.calls[root], s.spawning, s.changed
		s.mu.Unlock()
		if c != nil || spawning == 0 || root == "" {
			return c
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
	}
}

// rootOf is the top agent of from's tree.
func (s *Server) rootOf(from manager.Info) string {
	id, parent := from.ID, from.ParentID
	for range maxTreeDepth {
		if parent == "" {
			return id
		}
		info, err := s.cfg.Manager.Get(parent)
		if err != nil {
			return ""
		}
		id, parent = info.ID, info.ParentID
	}
	return ""
}

// elicitation is the form that puts q to the user: one text field, with
// the child's suggestions in its description.
func elicitation(q manager.QuestionInfo) *mcpsdk.ElicitParams {
	who := q.From.Type
	if q.From.Label != "" {
		who = "[" + q.From.Label + "] " + q.From.Type
	}
	desc := "Your answer, in plain words."
	if len(q.Question.Suggestions) > 0 {
		desc = "Your answer. Suggestions: " + strings.Join(q.Question.Suggestions, "; ")
	}
	return &mcpsdk.ElicitParams{
		Message: clip(fmt.Sprintf("A %s subagent asks: %s", who, q.Question.Text), 4096),
		RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{answerField: map[string]any{"type": "string", "title": "Answer", "description": desc}},
			"required":   []string{answerField},
		},
	}
}

// signState is the request state of a call waiting for input: its run ID,
// signed, so that a client can only resume a call this server gave it.
func (s *Server) signState(id string) string {
	return id + "." + base64.RawURLEncoding.EncodeToString(s.mac(id))
}

// verifyState returns the run ID of a state signState made.
func (s *Server) verifyState(state string) (string, bool) {
	id, sig, ok := strings.Cut(state, ".")
	if !ok {
		return "", false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(id)) {
		return "", false
	}
	return id, true
}

func (s *Server) mac(id string) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte("troupe-mcp-call\x00" + id))
	return h.Sum(nil)
}
