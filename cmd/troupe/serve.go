package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/mcpserver"
	"github.com/troupe-dev/troupe/manager"
)

type serveFlags struct {
	runFlags
	http  string
	types []string
}

func (a *app) mcpCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve agent types to MCP clients",
	}
	cmd.AddCommand(a.mcpServeCommand())
	return cmd
}

func (a *app) mcpServeCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the project's agent types as MCP tools, over stdio or streamable HTTP",
		Long: `Serve each agent type of the project as an MCP tool: its input is a task
(and optionally a model and budgets), its result the agent's report, with its
structured data, usage and run ID. Agents work in --repo; clients cannot pick
another directory. The budget flags cap what any client asks for. Runs are
resources: troupe://runs lists them, troupe://runs/ID shows one.

Over stdio (the default), stdout carries the protocol and nothing else; logs
go to stderr. With --http, the server listens on a loopback address only,
as it has no authentication.`,
		Example: `  troupe mcp serve --repo .
  troupe mcp serve --types explore,plan --max-cost 0.50
  troupe mcp serve --http 127.0.0.1:8765`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.mcpServe(cmd, f) },
	}
	fl := cmd.Flags()
	addRepoFlag(cmd, "directory the agents work in")
	fl.StringVar(&f.http, "http", "", "serve streamable HTTP on this loopback address, such as 127.0.0.1:8765 or :8765\n(the endpoint is /mcp; default: stdio)")
	fl.StringSliceVar(&f.types, "types", nil, "serve only these types, comma-separated (default: every type)")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "cap on each run's token budget")
	fl.DurationVar(&f.maxTime, "max-time", 0, "cap on each run's wall time, such as 90s or 5m")
	fl.IntVar(&f.maxToolCalls, "max-tool-calls", 0, "cap on each run's tool calls")
	fl.IntVar(&f.maxTurns, "max-turns", 0, "cap on each run's turns (model calls)")
	fl.Float64Var(&f.maxCost, "max-cost", 0, "cap on each run's cost in US dollars, over the agent and its subagents")
	fl.BoolVar(&f.yes, "yes", false, "let agents delegate to subagents (without it, delegation is refused)")
	return cmd
}

func (a *app) mcpServe(cmd *cobra.Command, f serveFlags) error {
	ctx := cmd.Context()
	limit, err := budgetFlags(cmd, f.runFlags)
	if err != nil {
		return err
	}
	var addr string
	if f.http != "" {
		if addr, err = loopbackAddr(f.http); err != nil {
			return err
		}
	}
	repo, where, err := repoDir(cmd)
	if err != nil {
		return err
	}
	reg, resolver, err := a.openProject(repo)
	if err != nil {
		return err
	}
	root := agenttypes.FindProjectRoot(repo)
	types, err := a.serveTypes(reg, root, f.types)
	if err != nil {
		return err
	}
	if len(types) == 0 {
		return usagef("no agent type to serve; 'troupe types list' shows the types")
	}
	mcpTools, closeMCP, err := a.mcpPool(reg)
	if err != nil {
		return err
	}
	defer closeMCP()
	def, _ := chooseModel(ctx, resolver, reg, "", "")
	runs := a.transcriptDir()
	spaces := a.workspaces(repo)
	defer spaces.close()
	var srv *mcpserver.Server
	mgr, err := a.newManager(ctx, manager.Config{
		Workspaces:        spaces,
		Registry:          reg,
		MCP:               mcpTools,
		Models:            resolver,
		DefaultModel:      def.Name,
		TranscriptDir:     runs,
		Logger:            a.logger(),
		ApproveDelegation: a.approver(f.yes, nil),
		AskUser:           func(ctx context.Context, q manager.QuestionInfo) (string, error) { return srv.AskUser(ctx, q) },
	})
	if err != nil {
		return err
	}
	srv, err = mcpserver.New(mcpserver.Config{Manager: mgr, Dir: repo, Types: types, Limit: limit, Version: version(), Logger: a.logger()})
	if err == nil && runs != "" {
		release, _ := lockNewTranscript(mgr.TranscriptPath())
		defer release()
	}
	if err == nil {
		fmt.Fprintf(a.stderr, "troupe: default model %s\n", def.Describe())
		fmt.Fprintf(a.stderr, "troupe: %s\n", workingIn(repo, where))
		err = a.serveOn(ctx, srv, addr)
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	mgr.CancelAll()
	if cerr := mgr.Close(closeCtx); cerr != nil {
		a.logger().Warn("agents still running at exit", "err", cerr)
	}
	if err == nil && ctx.Err() != nil {
		return exitError{exitInterrupted}
	}
	return err
}

// serveOn serves srv over stdio, or over HTTP on addr, until the client
// hangs up (stdio) or ctx ends.
func (a *app) serveOn(ctx context.Context, srv *mcpserver.Server, addr string) error {
	names := strings.Join(srv.Types(), ", ")
	if addr == "" {
		fmt.Fprintf(a.stderr, "troupe: serving %s over stdio\n", names)
		piped := newPipedSession(ctx, a.stdin, a.stdout)
		err := srv.MCP().Run(ctx, &mcpsdk.IOTransport{Reader: piped, Writer: piped})
		if ctx.Err() != nil || errors.Is(err, mcpsdk.ErrConnectionClosed) || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usagef("--http %s: %v; choose another port", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(a.stderr, "troupe: serving %s on http://%s/mcp\n", names, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	_ = hs.Shutdown(shutCtx)
	_ = hs.Close() // streams still open after the grace
	<-done
	return nil
}

// loopbackAddr is the address to listen on for --http: a host that is
// loopback (default 127.0.0.1) and a port.
func loopbackAddr(flag string) (string, error) {
	if !strings.Contains(flag, ":") {
		flag = ":" + flag
	}
	host, port, err := net.SplitHostPort(flag)
	if err != nil {
		return "", usagef("--http %s: %v; give an address such as 127.0.0.1:8765 or :8765", flag, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); !(host == "localhost" || ip != nil && ip.IsLoopback()) {
		return "", usagef("--http %s: troupe mcp serve has no authentication, so it listens on loopback only (127.0.0.1, ::1 or localhost); put a proxy that authenticates in front of it to serve other machines", flag)
	}
	return net.JoinHostPort(host, port), nil
}

// servedTypes are the names --types gives, each registered, or nil for
// every type.
func servedTypes(reg *agenttypes.Registry, names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" || slices.Contains(out, n) {
			continue
		}
		if _, err := reg.Type(n); err != nil {
			return nil, usageError{fmt.Errorf("--types: %w", err)}
		}
		out = append(out, n)
	}
	return out, nil
}

// serveTypes are the types to serve: those --types names (nil: every
// type). A named type that needs an MCP server the project's trust does
// not cover is refused, naming it; when every type is served, such types
// are left out with a warning.
func (a *app) serveTypes(reg *agenttypes.Registry, root string, named []string) ([]string, error) {
	names, err := servedTypes(reg, named)
	if err != nil {
		return nil, err
	}
	explicit := len(names) > 0
	if !explicit {
		for _, t := range reg.Types() {
			names = append(names, t.Name)
		}
	}
	var out []string
	for _, name := range names {
		t, err := reg.Type(name)
		if err != nil {
			return nil, err
		}
		untrusted := t.UntrustedMCPServers()
		switch {
		case len(untrusted) == 0:
			out = append(out, name)
		case explicit:
			return nil, usagef("%v; 'troupe trust --repo %s' shows what it would run and records your consent", untrusted[0].UntrustedError(), root)
		default:
			fmt.Fprintf(a.stderr, "troupe: not serving %s: %v; 'troupe trust --repo %s' shows what it would run and records your consent\n", name, untrusted[0].UntrustedError(), root)
		}
	}
	slices.Sort(out)
	return out, nil
}
