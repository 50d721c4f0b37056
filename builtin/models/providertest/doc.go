// Package providertest replays recorded model-provider HTTP exchanges, so
// that tests prove troupe's wiring against what providers really send
// rather than against guesses.
//
// A fixture file holds a list of exchanges, each a request the client must
// send and the response the server sends back:
//
//	# comment lines before the first exchange describe the recording
//	--- request (an optional label)
//	POST /v1/chat/completions
//	Authorization: Bearer sk-test-key
//
//	{"model": "gpt-4o-mini", "messages": [{"role": "system"}, {"role": "user", "content": "hi"}], "stream": "$absent"}
//	--- response
//	HTTP/2.0 200 OK
//	Content-Type: application/json
//
//	{"id": "chatcmpl-1", "object": "chat.completion", ...}
//
// The request's first line is the method and path; the header lines that
// follow must match exactly (list the key headers: Authorization,
// X-Api-Key, Anthropic-Version); after a blank line comes a JSON pattern
// the request body must match (see Match). The response's first line is
// the status line, then its headers, a blank line and the body, which is
// served byte for byte: everything up to the newline before the next
// "--- request" line (or the end of the file, less one final newline).
//
// A Server serves the exchanges in order on 127.0.0.1. A request that does
// not match the next exchange gets HTTP 400 with the differences, which a
// model client surfaces as an error, and the test fails with them; so does
// an exchange never requested.
package providertest
