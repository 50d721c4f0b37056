package outline_test

import (
	"fmt"

	"github.com/troupe-dev/troupe/builtin/outline"
)

func ExampleParse() {
	src := []byte(`package web

// Shutdown stops the server. It waits for open connections.
func (s *Server) Shutdown(ctx context.Context) error {
	return nil
}
`)
	for _, d := range outline.Parse(outline.LangOf("server.go"), src) {
		fmt.Printf("%d-%d %s %s\n%s\n%s\n", d.Line, d.End, d.Kind, d.Qualified, d.Signature, outline.FirstSentence(d.Doc))
	}
	// Output:
	// 4-6 func (*Server).Shutdown
	// func (s *Server) Shutdown(ctx context.Context) error
	// Shutdown stops the server.
}

func ExampleParse_python() {
	src := []byte(`class Session:
    def request(self, method, url):
        """Sends a request."""
        return send(method, url)
`)
	for _, d := range outline.Parse(outline.Python, src) {
		fmt.Printf("%d-%d %s %s %q\n", d.Line, d.End, d.Kind, d.Qualified, d.Doc)
	}
	// Output:
	// 1-4 type Session ""
	// 2-4 func Session.request "Sends a request."
}
