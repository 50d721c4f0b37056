package providertest_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/troupe-dev/troupe/builtin/models/providertest"
)

func Example() {
	exchanges, err := providertest.Parse("hello.txt", []byte(`# one exchange
--- request
POST /v1/chat/completions
Authorization: Bearer sk-test

{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "$contains:hello"}]}
--- response
HTTP/1.1 200 OK
Content-Type: application/json

{"choices": [{"message": {"role": "assistant", "content": "Hello!"}}]}
`))
	if err != nil {
		panic(err)
	}
	srv := providertest.Start(exchanges...)

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello there"}],"temperature":0}`))
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	fmt.Println(srv.Close())
	// Output:
	// 200 {"choices": [{"message": {"role": "assistant", "content": "Hello!"}}]}
	// <nil>
}

func ExampleMatch() {
	pattern := map[string]any{"model": "gpt-4o-mini", "stream": "$absent", "messages": []any{map[string]any{"role": "system"}, "$any"}}
	fmt.Println(providertest.Match(pattern, map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "system", "content": "x"}, 1.0}}))
	fmt.Println(providertest.Match(pattern, map[string]any{"model": "gpt-4o", "messages": []any{}}))
	fmt.Println(providertest.Match(pattern, map[string]any{"model": "gpt-4o-mini", "stream": true}))
	// Output:
	// <nil>
	// $.messages: want 2 elements, got 0: []
	// $.messages: missing
}
