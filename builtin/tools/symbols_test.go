package tools_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/tools"
)

// symbolLines is the output without its first line (the counts).
func symbolLines(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(out, "\n")
	return lines[1:]
}

const goServer = `package web

import "context"

// ErrClosed is returned after Close.
var ErrClosed = errClosed()

// Limits of a request.
const (
	// MaxBodySize bounds a request body.
	MaxBodySize = 1 << 20
	maxHeaders  = 100 // headers read at most
)

// Server serves requests.
type Server struct {
	// ReadHeaderTimeout is how long reading the headers may take.
	ReadHeaderTimeout int
	conns             map[int]bool
}

// Handler answers a request.
type Handler interface {
	// Serve answers it.
	Serve(ctx context.Context, req string) error
}

// Shutdown stops the server. It waits
// for open connections.
func (s *Server) Shutdown(
	ctx context.Context,
) error {
	return nil
}

func (s Server) readHeaderTimeout() int { return s.ReadHeaderTimeout }

// List is a list.
type List[T any] struct{ items []T }

// Push appends v.
func (l *List[T]) Push(v T) { l.items = append(l.items, v) }

func errClosed() error { return nil }
`

func TestSymbolsGo(t *testing.T) {
	dir := writeTree(t, map[string]string{"web/server.go": goServer})
	out := mustCall(t, tools.Symbols(), dir, `{}`)
	assert.Equal(t, []string{
		"web/server.go:6-6 value ErrClosed var ErrClosed = errClosed() — ErrClosed is returned after Close.",
		"web/server.go:11-11 value MaxBodySize const MaxBodySize = 1 << 20 — MaxBodySize bounds a request body.",
		"web/server.go:12-12 value maxHeaders const maxHeaders = 100 — headers read at most",
		"web/server.go:16-20 type Server type Server struct — Server serves requests.",
		"web/server.go:18-18 value Server.ReadHeaderTimeout ReadHeaderTimeout int — ReadHeaderTimeout is how long reading the headers may take.",
		"web/server.go:19-19 value Server.conns conns map[int]bool",
		"web/server.go:23-26 type Handler type Handler interface — Handler answers a request.",
		"web/server.go:25-25 func Handler.Serve Serve(ctx context.Context, req string) error — Serve answers it.",
		"web/server.go:30-34 func (*Server).Shutdown func (s *Server) Shutdown(ctx context.Context) error — Shutdown stops the server.",
		"web/server.go:36-36 func Server.readHeaderTimeout func (s Server) readHeaderTimeout() int",
		"web/server.go:39-39 type List type List[T any] struct — List is a list.",
		"web/server.go:39-39 value List.items items []T",
		"web/server.go:42-42 func (*List[T]).Push func (l *List[T]) Push(v T) — Push appends v.",
		"web/server.go:44-44 func errClosed func errClosed() error",
	}, symbolLines(t, out))
	assert.True(t, strings.HasPrefix(out, "14 declarations in 1 file; 14 match\n"), out)
}

func TestSymbolsQuery(t *testing.T) {
	dir := writeTree(t, map[string]string{"web/server.go": goServer})
	tests := []struct {
		name, args string
		want       []string
	}{
		{"a prefix of a name part", `{"query":"timeout"}`, []string{
			"web/server.go:18-18 value Server.ReadHeaderTimeout ReadHeaderTimeout int — ReadHeaderTimeout is how long reading the headers may take.",
			"web/server.go:36-36 func Server.readHeaderTimeout func (s Server) readHeaderTimeout() int",
		}},
		{"parts joined, snake_case or camelCase", `{"query":"read_header"}`, []string{
			"web/server.go:18-18 value Server.ReadHeaderTimeout ReadHeaderTimeout int — ReadHeaderTimeout is how long reading the headers may take.",
			"web/server.go:36-36 func Server.readHeaderTimeout func (s Server) readHeaderTimeout() int",
		}},
		{"not inside a part", `{"query":"imeout eader"}`, nil},
		{"a doc word's start", `{"query":"bound"}`, []string{
			"web/server.go:11-11 value MaxBodySize const MaxBodySize = 1 << 20 — MaxBodySize bounds a request body.",
		}},
		{"function words match names only", `{"query":"is the"}`, nil},
		{"the kind", `{"query":"server","kind":"func"}`, []string{
			"web/server.go:30-34 func (*Server).Shutdown func (s *Server) Shutdown(ctx context.Context) error — Shutdown stops the server.",
		}},
		{"a receiver alone is no match", `{"query":"server conns"}`, []string{
			"web/server.go:19-19 value Server.conns conns map[int]bool",
			// "conns" looks for "conn": the doc's "connections".
			"web/server.go:30-34 func (*Server).Shutdown func (s *Server) Shutdown(ctx context.Context) error — Shutdown stops the server.",
			"web/server.go:16-20 type Server type Server struct — Server serves requests.",
		}},
		{"an ending dropped", `{"query":"bounded"}`, []string{
			"web/server.go:11-11 value MaxBodySize const MaxBodySize = 1 << 20 — MaxBodySize bounds a request body.",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := mustCall(t, tools.Symbols(), dir, tt.args)
			got := symbolLines(t, out)
			if tt.want == nil {
				assert.Equal(t, []string{"... no declaration matches; try other words, or fewer"}, got)
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestSymbolsOrder checks the order: by relevance, a word in a name
// counting more than in a doc comment, two words more than one, then by
// path and line, the same on every call.
func TestSymbolsOrder(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"b/limit.go": "package b\n\n// LimitBody caps a body.\nfunc LimitBody() {}\n\nfunc Limit() {}\n",
		"a/limit.go": "package a\n\nfunc Limit() {}\n\n// Reader reads, with a limit on the body size.\nfunc Reader() {}\n\n// Other caps nothing.\nfunc Other() {}\n",
		"a/body.go":  "package a\n\n// Cap limits.\nfunc Cap() {}\n",
	})
	want := []string{
		"b/limit.go:4-4 func LimitBody func LimitBody() — LimitBody caps a body.",                 // name, 2 words
		"a/limit.go:6-6 func Reader func Reader() — Reader reads, with a limit on the body size.", // doc, 2 words
		"a/limit.go:3-3 func Limit func Limit()",                                                  // name, 1 word: by path
		"b/limit.go:6-6 func Limit func Limit()",
		"a/body.go:4-4 func Cap func Cap() — Cap limits.", // doc, 1 word
	}
	for range 3 {
		out := mustCall(t, tools.Symbols(), dir, `{"query":"limit body"}`)
		assert.Equal(t, "6 declarations in 3 files; 5 match: limit 5, body 2", strings.Split(out, "\n")[0])
		assert.Equal(t, want, symbolLines(t, out))
	}
}

// TestSymbolsBody checks that the query's words are found in bodies:
// a declaration whose body uses them matches, and ranks by how much it
// uses them, the rarer words more; each line belongs to the innermost
// declaration around it, and the doc comment of a member to none.
func TestSymbolsBody(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"conn.go": `package web

// serve runs the connection's loop.
func (c *conn) serve() {
	c.rwc.SetReadDeadline(c.server.ReadHeaderTimeout)
	for {
		c.readRequest()
	}
}

// readRequest reads one request.
func (c *conn) readRequest() {
	c.rwc.SetReadDeadline(c.server.ReadTimeout)
}

func unrelated() { println("header") }
`,
		"client.py": `class Session:
    """A session keeps cookies."""

    def request(self, url):
        """Send a request."""
        self.sent += 1
        log.debug(url)
        return self.adapter.send(url, self.header_timeout)
`,
	})
	out := mustCall(t, tools.Symbols(), dir, `{"query":"header timeout deadline"}`)
	assert.Equal(t, "5 declarations in 2 files; 3 match: header 2, timeout 3, deadline 2", strings.Split(out, "\n")[0])
	assert.Equal(t, []string{
		// Uses all three words, header and deadline rarer than timeout.
		"conn.go:4-9 func (*conn).serve func (c *conn) serve() — serve runs the connection's loop.",
		// Two words, each once: the shorter body first.
		"conn.go:12-14 func (*conn).readRequest func (c *conn) readRequest() — readRequest reads one request.",
		"client.py:4-8 func Session.request def request(self, url) — Send a request.",
	}, symbolLines(t, out))

	// The class's own lines are not its methods': its body has no
	// "send".
	out = mustCall(t, tools.Symbols(), dir, `{"query":"send"}`)
	assert.Equal(t, []string{
		"client.py:4-8 func Session.request def request(self, url) — Send a request.",
	}, symbolLines(t, out))
	// The first line holds the name, which counts once, as a name: a
	// one-line function's body is empty.
	out = mustCall(t, tools.Symbols(), dir, `{"query":"println"}`)
	assert.Equal(t, []string{"... no declaration matches; try other words, or fewer"}, symbolLines(t, out))
}

func TestSymbolsCounts(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.go": "package a\n\nfunc A() {}\n\n// B has a body.\nfunc B() {}\n\ntype Body int\n",
		"b.py": "def body():\n    pass\n",
	})
	tests := []struct{ args, want string }{
		{`{}`, "4 declarations in 2 files; 4 match"},
		{`{"query":"body"}`, "4 declarations in 2 files; 3 match: body 3"},
		{`{"query":"body has","kind":"func"}`, "4 declarations in 2 files; 2 func declarations match: body 2, has 1"},
		{`{"query":"body","kind":"type"}`, "4 declarations in 2 files; 1 type declaration match: body 1"},
	}
	for _, tt := range tests {
		out := mustCall(t, tools.Symbols(), dir, tt.args)
		assert.Equal(t, tt.want, strings.Split(out, "\n")[0], tt.args)
		counts, syms := tools.ParseSymbols(out)
		assert.Equal(t, 4, counts.Declarations)
		assert.Equal(t, 2, counts.Files)
		assert.Equal(t, len(syms), counts.Matches, tt.args)
	}
}

func TestSymbolsPython(t *testing.T) {
	dir := writeTree(t, map[string]string{"pkg/session.py": `import os


# A session keeps cookies.
class Session(Base):
    """Keeps cookies across requests.

    More text.
    """

    TIMEOUT = 3

    @property
    def cookies(self):
        return self._c

    def request(self, method,
                url, timeout=None):  # the main entry
        """Sends a request. Then waits."""
        def helper():
            pass
        text = """
not code
"""
        return helper()

    async def close(self): pass


def send(url: str) -> bool:
    '''Send url.'''
    return True
`})
	out := mustCall(t, tools.Symbols(), dir, `{}`)
	assert.Equal(t, []string{
		"pkg/session.py:5-27 type Session class Session(Base) — Keeps cookies across requests.",
		"pkg/session.py:14-15 func Session.cookies def cookies(self)",
		"pkg/session.py:17-25 func Session.request def request(self, method, url, timeout=None) — Sends a request.",
		"pkg/session.py:27-27 func Session.close async def close(self)",
		"pkg/session.py:30-32 func send def send(url: str) -> bool — Send url.",
	}, symbolLines(t, out))
}

func TestSymbolsTypeScript(t *testing.T) {
	dir := writeTree(t, map[string]string{"src/client.ts": "import { x } from './x'\n" +
		"\n" +
		"/** Options of a client. */\n" +
		"export interface Options {\n" +
		"  /** How long to wait, in ms. */\n" +
		"  timeout?: number\n" +
		"  retry(n: number): boolean\n" +
		"}\n" +
		"\n" +
		"// Client talks to the server.\n" +
		"export class Client<T> extends Base {\n" +
		"  private cache = new Map<string, T>()\n" +
		"\n" +
		"  constructor(private url: string) {\n" +
		"    super()\n" +
		"  }\n" +
		"\n" +
		"  /**\n" +
		"   * Fetches a path.\n" +
		"   * @param path the path\n" +
		"   */\n" +
		"  async fetch(path: string): Promise<{ body: string }> {\n" +
		"    const re = /[{]/g\n" +
		"    const s = `${path.replace(re, '}')}{`\n" +
		"    return { body: s }\n" +
		"  }\n" +
		"\n" +
		"  onError = (e: Error) => {\n" +
		"    throw e\n" +
		"  }\n" +
		"}\n" +
		"\n" +
		"export const backoff = (n: number): number =>\n" +
		"  2 ** n\n" +
		"\n" +
		"export function parse(text: string) {\n" +
		"  return JSON.parse(text)\n" +
		"}\n" +
		"\n" +
		"export const DEFAULTS = { retries: 3 }\n",
	})
	out := mustCall(t, tools.Symbols(), dir, `{}`)
	assert.Equal(t, []string{
		"src/client.ts:4-8 type Options export interface Options — Options of a client.",
		"src/client.ts:6-6 value Options.timeout timeout?: number — How long to wait, in ms.",
		"src/client.ts:7-7 func Options.retry retry(n: number): boolean",
		"src/client.ts:11-31 type Client export class Client<T> extends Base — Client talks to the server.",
		"src/client.ts:12-12 value Client.cache private cache = new Map<string, T>()",
		"src/client.ts:14-16 func Client.constructor constructor(private url: string)",
		"src/client.ts:22-26 func Client.fetch async fetch(path: string): Promise<{ body: string }> — Fetches a path.",
		"src/client.ts:28-30 func Client.onError onError = (e: Error) =>",
		"src/client.ts:33-34 func backoff export const backoff = (n: number): number => 2 ** n",
		"src/client.ts:36-38 func parse export function parse(text: string)",
		"src/client.ts:40-40 value DEFAULTS export const DEFAULTS =",
	}, symbolLines(t, out))
}

func TestSymbolsRust(t *testing.T) {
	dir := writeTree(t, map[string]string{"src/lib.rs": `use std::fmt;

/// A parser of tokens.
#[derive(Debug)]
pub struct Parser<'a> {
    src: &'a str,
}

impl<'a> Parser<'a> {
    /// Returns the next token.
    pub fn next_token(&mut self) -> Option<char> {
        let s = r#"}{"#;
        let c = '}';
        None
    }
}

impl fmt::Display for Parser<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{{")
    }
}

pub const MAX: usize = 10;

#[cfg(test)]
mod tests {
    #[test]
    fn parses() {}
}
`})
	out := mustCall(t, tools.Symbols(), dir, `{}`)
	assert.Equal(t, []string{
		"src/lib.rs:5-7 type Parser pub struct Parser<'a> — A parser of tokens.",
		"src/lib.rs:11-15 func Parser::next_token pub fn next_token(&mut self) -> Option<char> — Returns the next token.",
		"src/lib.rs:19-21 func Parser::fmt fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result",
		"src/lib.rs:24-24 value MAX pub const MAX: usize = 10",
	}, symbolLines(t, out))
	out = mustCall(t, tools.Symbols(), dir, `{"path":"src/lib.rs","query":"parses"}`)
	assert.Equal(t, []string{
		"src/lib.rs:5-7 type Parser pub struct Parser<'a> — A parser of tokens.", // "parses" looks for "pars"
		"src/lib.rs:29-29 func tests::parses fn parses()",                        // a file named as path shows its tests
	}, symbolLines(t, out))
}

func TestSymbolsJava(t *testing.T) {
	dir := writeTree(t, map[string]string{"src/main/java/notes/Sync.java": `package notes;

/** Keeps notes in step. */
public class Sync {
    private final List<Note> pending = new ArrayList<>();

    public Sync(Api api) {
        this.api = api;
    }

    /** Sends the queued edits. */
    @Override
    public int push() throws IOException {
        return 0;
    }

    static class Conflict {
        Note pick(Note a, Note b) { return a; }
    }
}
`})
	out := mustCall(t, tools.Symbols(), dir, `{}`)
	assert.Equal(t, []string{
		"src/main/java/notes/Sync.java:4-20 type Sync public class Sync — Keeps notes in step.",
		"src/main/java/notes/Sync.java:5-5 value Sync.pending private final List<Note> pending = new ArrayList<>()",
		"src/main/java/notes/Sync.java:7-9 func Sync.Sync public Sync(Api api)",
		"src/main/java/notes/Sync.java:13-15 func Sync.push public int push() throws IOException — Sends the queued edits.",
		"src/main/java/notes/Sync.java:17-19 type Sync.Conflict static class Conflict",
		"src/main/java/notes/Sync.java:18-18 func Sync.Conflict.pick Note pick(Note a, Note b)",
	}, symbolLines(t, out))
}

func TestSymbolsC(t *testing.T) {
	dir := writeTree(t, map[string]string{"wc.c": `#include <stdio.h>

#define BUF_SIZE 4096
#define MIN(a, b) \
	((a) < (b) ? (a) : (b))

static long count(FILE *f);

/* A counter of words. */
typedef struct {
	long words;
} counter;

struct node {
	struct node *next;
};

/* count counts the words of f. */
static long count(FILE *f)
{
	char *s = "}";
	return 0;
}

int
main(int argc, char **argv)
{
	return count(stdin) > 0;
}
`})
	out := mustCall(t, tools.Symbols(), dir, `{}`)
	assert.Equal(t, []string{
		"wc.c:3-3 value BUF_SIZE #define BUF_SIZE 4096",
		"wc.c:4-5 func MIN #define MIN(a, b) \\ ((a) < (b) ? (a) : (b))",
		"wc.c:10-12 type counter typedef struct — A counter of words.",
		"wc.c:14-16 type node struct node",
		"wc.c:19-23 func count static long count(FILE *f) — count counts the words of f.",
		"wc.c:25-29 func main int main(int argc, char **argv)",
	}, symbolLines(t, out))
}

// TestSymbolsLeavesOut checks what a walk leaves out, like grep, and
// what path brings back.
func TestSymbolsLeavesOut(t *testing.T) {
	dir := writeTree(t, map[string]string{
		".gitignore":              "build/\n",
		"app.go":                  "package app\n\nfunc Serve() {}\n",
		"app_test.go":             "package app\n\nfunc TestServe() {}\n",
		"gen.go":                  "// Code generated by stringer. DO NOT EDIT.\n\npackage app\n\nfunc ServeGen() {}\n",
		"build/out.go":            "package build\n\nfunc ServeBuilt() {}\n",
		"vendor/lib/lib.go":       "package lib\n\nfunc ServeVendored() {}\n",
		"node_modules/x/index.js": "function serveModule() {}\n",
		"tests/serve_helpers.py":  "def serve_helper():\n    pass\n",
		"web/app.test.ts":         "function serveTest() {}\n",
		".hidden/h.go":            "package h\n\nfunc ServeHidden() {}\n",
		"bin.go":                  "package bin\n\nfunc ServeBinary() {}\x00\n",
		"notes.txt":               "func ServeText() {}\n",
	})
	out := mustCall(t, tools.Symbols(), dir, `{"query":"serve"}`)
	assert.Equal(t, strings.Join([]string{
		"2 declarations in 2 files; 2 match: serve 2",
		".hidden/h.go:3-3 func ServeHidden func ServeHidden()",
		"app.go:3-3 func Serve func Serve()",
		"... left out: 2 test files, 1 test directory, 2 vendored directories, 1 generated file; name one as path to include it",
	}, "\n"), out)
	tests := []struct{ name, path, want string }{
		{"a test file", "app_test.go", "app_test.go:3-3 func TestServe func TestServe()"},
		{"a generated file", "gen.go", "gen.go:5-5 func ServeGen func ServeGen()"},
		{"a test directory", "tests", "tests/serve_helpers.py:1-2 func serve_helper def serve_helper()"},
		{"a vendored directory", "vendor/lib", "vendor/lib/lib.go:3-3 func ServeVendored func ServeVendored()"},
		{"an ignored directory", "build", "build/out.go:3-3 func ServeBuilt func ServeBuilt()"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := mustCall(t, tools.Symbols(), dir, fmt.Sprintf(`{"query":"serve","path":%q}`, tt.path))
			assert.Equal(t, []string{tt.want}, symbolLines(t, out))
		})
	}
}

func TestSymbolsCaps(t *testing.T) {
	var many strings.Builder
	many.WriteString("package many\n")
	for i := range 60 {
		fmt.Fprintf(&many, "\nfunc F%02d() {}\n", i)
	}
	dir := writeTree(t, map[string]string{
		"many.go":  many.String(),
		"huge.go":  "package huge\n\nfunc Huge() {}\n" + strings.Repeat("// padding\n", 200_000),
		"empty.go": "",
	})
	out := mustCall(t, tools.Symbols(), dir, `{}`)
	lines := strings.Split(out, "\n")
	assert.Equal(t, "60 declarations in 2 files; 60 match", lines[0], "an empty file is scanned; one over 2 MiB is not")
	assert.Len(t, lines, 1+50+2, "50 declarations by default")
	assert.Equal(t, "... 10 more matches not shown; narrow the query, path or kind, or raise max_results", lines[51])
	assert.Equal(t, "... 1 file over 2 MiB not outlined", lines[52])

	out = mustCall(t, tools.Symbols(), dir, `{"max_results":100000}`)
	assert.Len(t, strings.Split(out, "\n"), 1+60+1, "max_results is clamped to 500")

	_, err := call(t, tools.Symbols(), dir, `{"path":"huge.go"}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "huge.go is larger than 2 MiB")

	long := strings.Repeat("word ", 300)
	_, err = call(t, tools.Symbols(), dir, fmt.Sprintf(`{"query":%q}`, long))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "give at most 1024")
}

func TestSymbolsRefusals(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.go"), []byte("package s\n\nfunc Secret() {}\n"), 0o644))
	dir := writeTree(t, map[string]string{"a.go": "package a\n\nfunc A() {}\n", "notes.md": "# notes\n"})
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.go"), filepath.Join(dir, "link.go")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "linkdir")))
	tests := []struct{ name, args, want string }{
		{"outside the root", `{"path":"../x"}`, "outside"},
		{"an absolute path outside", fmt.Sprintf(`{"path":%q}`, outside), "outside"},
		{"a symlink out of the root", `{"path":"link.go"}`, "outside"},
		{"a symlinked directory out of the root", `{"path":"linkdir"}`, "outside"},
		{"not source code", `{"path":"notes.md"}`, "notes.md is not source code symbols reads"},
		{"a missing path", `{"path":"nope"}`, "does not exist"},
		{"an unknown kind", `{"kind":"class"}`, `kind "class" is not one of func, type, value`},
		{"a negative max_results", `{"max_results":-1}`, "max_results must be between 1 and 500"},
		{"a query of no words", `{"query":"? !"}`, "has no word of two letters or more"},
		{"an unknown argument", `{"pattern":"x"}`, `unknown argument "pattern"; valid arguments are query, path, kind, max_results`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := call(t, tools.Symbols(), dir, tt.args)
			require.Error(t, err, out)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	out := mustCall(t, tools.Symbols(), dir, `{"query":"secret"}`)
	assert.Equal(t, "1 declaration in 1 file; 0 match: secret 0\n... no declaration matches; try other words, or fewer", out,
		"a walk follows no symlink")
}

func TestSymbolsOddPaths(t *testing.T) {
	dir := writeTree(t, map[string]string{"a:b/c d.go": "package c\n\nfunc Odd() {}\n", "empty/x.txt": "x\n"})
	out := mustCall(t, tools.Symbols(), dir, `{}`)
	assert.Equal(t, []string{`"a:b/c d.go":3-3 func Odd func Odd()`}, symbolLines(t, out))
	_, syms := tools.ParseSymbols(out)
	require.Len(t, syms, 1)
	assert.Equal(t, tools.Symbol{Path: "a:b/c d.go", Line: 3, End: 3, Kind: "func", Name: "Odd", Signature: "func Odd()"}, syms[0])

	out = mustCall(t, tools.Symbols(), dir, `{"path":"empty"}`)
	assert.Equal(t, "0 declarations in 0 files; 0 match\n... no source files here that symbols reads (Go, Python, JavaScript/TypeScript, Rust, Java, C)", out)
}

func TestParseSymbols(t *testing.T) {
	out := strings.Join([]string{
		"1990 declarations in 51 files; 3 func declarations match: limit 2, body 3",
		"request.go:1186-1191 func MaxBytesReader func MaxBytesReader(w ResponseWriter, r io.ReadCloser, n int64) io.ReadCloser — MaxBytesReader is similar to [io.LimitReader].",
		`"we:ird.go":3-9 func "odd name" func x() — Doc.`,
		"server.go:3150-3186 func (*Server).Shutdown func (s *Server) Shutdown(ctx context.Context) error",
		"... 1 more match not shown",
	}, "\n")
	counts, syms := tools.ParseSymbols(out)
	assert.Equal(t, tools.SymbolCounts{Declarations: 1990, Files: 51, Matches: 3,
		Words: []tools.WordCount{{Word: "limit", Count: 2}, {Word: "body", Count: 3}}}, counts)
	assert.Equal(t, []tools.Symbol{
		{Path: "request.go", Line: 1186, End: 1191, Kind: "func", Name: "MaxBytesReader",
			Signature: "func MaxBytesReader(w ResponseWriter, r io.ReadCloser, n int64) io.ReadCloser", Doc: "MaxBytesReader is similar to [io.LimitReader]."},
		{Path: "we:ird.go", Line: 3, End: 9, Kind: "func", Name: "odd name", Signature: "func x()", Doc: "Doc."},
		{Path: "server.go", Line: 3150, End: 3186, Kind: "func", Name: "(*Server).Shutdown", Signature: "func (s *Server) Shutdown(ctx context.Context) error"},
	}, syms)
}
