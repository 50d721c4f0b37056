package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-dev/troupe/agenttypes"
)

// A tool is one tool of a server, as agents call it.
type tool struct {
	srv  *server
	name string // the server's own name for it
	spec agenttypes.ToolSpec
}

var _ agenttypes.Tool = (*tool)(nil)

func (s *server) tools(infos []toolInfo) []agenttypes.Tool {
	out := make([]agenttypes.Tool, 0, len(infos))
	for _, in := range infos {
		out = append(out, &tool{srv: s, name: in.Name, spec: agenttypes.ToolSpec{
			Name:        agenttypes.MCPToolName(s.entry.Name, in.Name),
			Description: in.Description,
			Parameters:  in.InputSchema,
		}})
	}
	return out
}

// Spec describes the tool as its server does. ReadOnly stays false: a
// server's read-only hint is its own claim, not one troupe can check.
func (t *tool) Spec() agenttypes.ToolSpec { return t.spec }

// Call checks args against the tool's input schema, calls the tool on
// its server (starting it if need be) and returns its result as text.
func (t *tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := t.validate(ctx, args); err != nil {
		return "", err
	}
	sess, err := t.srv.session(ctx)
	if err != nil {
		return "", err
	}
	res, err := sess.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: t.name, Arguments: args})
	if err != nil {
		return "", t.callError(ctx, sess, err)
	}
	text := resultText(res, t.srv.pool.cfg.MaxResult)
	if res.IsError {
		return "", fmt.Errorf("%w: %s: %s", ErrToolFailed, t.spec.Name, text)
	}
	return text, nil
}

// callError says why a call failed: the context ended, the server
// answered with an error, or the session broke, which restarts the
// server on the next call.
func (t *tool) callError(ctx context.Context, sess *session, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %s did not answer in time: %w", t.spec.Name, describe(t.srv.entry), ctx.Err())
	}
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return fmt.Errorf("%w: %s: %s answered: %v", ErrToolFailed, t.spec.Name, describe(t.srv.entry), err)
	}
	sess.broken.Store(true)
	return fmt.Errorf("%w: %s: %s stopped during the call (%v); troupe starts it again once per run, on the next call", ErrDown, t.spec.Name, describe(t.srv.entry), err)
}

// validate checks args against the server's input schema, as every
// tool's arguments are checked (agenttypes.ValidateArgs): within ctx and
// a work budget, the schema compiled once for all its tools.
func (t *tool) validate(ctx context.Context, args json.RawMessage) error {
	err := agenttypes.ValidateArgs(ctx, t.spec.Parameters, args)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err
	}
	return fmt.Errorf("%w: %s: %v; call it again with arguments its parameters allow", ErrInvalidArguments, t.spec.Name, err)
}

// resultText is a tool result as text of at most max bytes (and a note
// of what was cut): text joined, other content summarised, structured
// content as JSON when there is nothing else.
func resultText(res *mcpsdk.CallToolResult, max int) string {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, contentText(c))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	text := strings.Join(parts, "\n")
	if len(text) <= max {
		return text
	}
	cut := runeStart(text, max)
	return text[:cut] + fmt.Sprintf("\n[%d more bytes of the result cut]", len(text)-cut)
}

func contentText(c mcpsdk.Content) string {
	switch c := c.(type) {
	case *mcpsdk.TextContent:
		return c.Text
	case *mcpsdk.ImageContent:
		return fmt.Sprintf("[image, %s, %d bytes]", c.MIMEType, len(c.Data))
	case *mcpsdk.AudioContent:
		return fmt.Sprintf("[audio, %s, %d bytes]", c.MIMEType, len(c.Data))
	case *mcpsdk.ResourceLink:
		return fmt.Sprintf("[resource %s: %s]", c.Name, c.URI)
	case *mcpsdk.EmbeddedResource:
		if c.Resource == nil {
			return "[resource]"
		}
		if c.Resource.Text != "" {
			return fmt.Sprintf("[resource %s]\n%s", c.Resource.URI, c.Resource.Text)
		}
		return fmt.Sprintf("[resource %s, %s, %d bytes]", c.Resource.URI, c.Resource.MIMEType, len(c.Resource.Blob))
	default:
		return fmt.Sprintf("[%T content]", c)
	}
}
