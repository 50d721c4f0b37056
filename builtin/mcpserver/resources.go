package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-dev/troupe/manager"
)

// The URIs of the run resources.
const (
	runsURI    = "troupe://runs"
	runsPrefix = runsURI + "/"
)

// A runEntry is one run in troupe://runs.
type runEntry struct {
	ID      string         `json:"id"`
	URI     string         `json:"uri"`
	Type    string         `json:"type"`
	Task    string         `json:"task"`
	State   manager.State  `json:"state"`
	Reason  manager.Reason `json:"reason,omitempty"`
	Created time.Time      `json:"created"`
	Usage   manager.Usage  `json:"usage"`
}

// A runRecord is troupe://runs/ID: the agent as the manager knows it,
// the agents it spawned, and, once it ended, its result.
type runRecord struct {
	Agent    manager.Info    `json:"agent"`
	Children []manager.Info  `json:"children,omitempty"`
	Result   *manager.Result `json:"result,omitempty"`
}

// maxListedTask bounds a task in troupe://runs; the run's record has it
// whole.
const maxListedTask = 200

func (s *Server) addResources() {
	s.mcp.AddResource(&mcpsdk.Resource{
		URI: runsURI, Name: "runs", Title: "Runs", MIMEType: "application/json",
		Description: "The runs this server started, newest first: each one's ID, type, task, state and usage.",
	}, s.readRuns)
	s.mcp.AddResourceTemplate(&mcpsdk.ResourceTemplate{
		URITemplate: runsPrefix + "{id}", Name: "run", Title: "Run", MIMEType: "application/json",
		Description: "One run (or one of its subagents) by ID: its record, the agents it spawned, and its result once it ended.",
	}, s.readRun)
}

func (s *Server) readRuns(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	s.mu.Lock()
	ids := slices.Clone(s.runs)
	s.mu.Unlock()
	entries := make([]runEntry, 0, len(ids))
	for _, id := range slices.Backward(ids) {
		info, err := s.cfg.Manager.Get(id)
		if err != nil {
			continue // forgotten by the manager (Config.KeepEnded)
		}
		entries = append(entries, runEntry{
			ID: id, URI: runsPrefix + id, Type: info.Type, Task: clip(oneLine(info.Task), maxListedTask),
			State: info.State, Reason: info.Reason, Created: info.Created, Usage: info.Usage,
		})
	}
	return jsonResource(req.Params.URI, entries)
}

func (s *Server) readRun(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	uri := req.Params.URI
	id := strings.TrimPrefix(uri, runsPrefix)
	if id == uri || !s.served(id) {
		return nil, mcpsdk.ResourceNotFoundError(uri)
	}
	info, err := s.cfg.Manager.Get(id)
	if err != nil {
		return nil, mcpsdk.ResourceNotFoundError(uri)
	}
	rec := runRecord{Agent: info, Children: s.cfg.Manager.List(manager.Filter{ParentID: id})}
	if info.State.Terminal() {
		if res, err := s.cfg.Manager.Wait(ctx, id); err == nil {
			rec.Result = &res
		}
	}
	return jsonResource(uri, rec)
}

// served reports whether id is a run this server started or an agent
// below one: a client reads nothing else the manager runs.
func (s *Server) served(id string) bool {
	info, err := s.cfg.Manager.Get(id)
	if err != nil {
		return false
	}
	root := s.rootOf(info)
	s.mu.Lock()
	defer s.mu.Unlock()
	return root != "" && slices.Contains(s.runs, root)
}

func jsonResource(uri string, v any) (*mcpsdk.ReadResourceResult, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}
