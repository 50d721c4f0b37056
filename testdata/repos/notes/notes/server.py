"""The HTTP API of the notes service."""

import json
from http.server import BaseHTTPRequestHandler, HTTPServer

from .auth import RateLimiter, verify_token
from .search import SearchIndex, highlight, tokenize
from .storage import NoteStore

store = None
index = SearchIndex()
limiter = RateLimiter(rate=100)


class NotesHandler(BaseHTTPRequestHandler):
    def _send_json(self, status, payload):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _authorized(self):
        header = self.headers.get("Authorization", "")
        if not header.startswith("Bearer "):
            return False
        return verify_token(header[len("Bearer "):], b"notes", self.server.token_hash)

    def do_GET(self):
        if not self._authorized():
            self._send_json(401, {"error": "unauthorized"})
            return
        if self.path.startswith("/search?q="):
            q = self.path[len("/search?q="):]
            ids = index.query(q)
            hits = [store.get(i) for i in sorted(ids)]
            self._send_json(200, [{"id": n.id, "excerpt": highlight(n.body, tokenize(q))} for n in hits])
            return
        notes = store.list_recent()
        self._send_json(200, [{"id": n.id, "title": n.title} for n in notes])

    def do_POST(self):
        if not self._authorized():
            self._send_json(401, {"error": "unauthorized"})
            return
        if not limiter.allow(self.client_address[0], self.server.clock()):
            self._send_json(429, {"error": "too many requests"})
            return
        length = int(self.headers.get("Content-Length", 0))
        data = json.loads(self.rfile.read(length))
        note = store.add(data["title"], data.get("body", ""), data.get("tags", []))
        index.index_note(note)
        self._send_json(201, {"id": note.id})


def serve(port, db_path, token_hash):
    global store
    store = NoteStore(db_path)
    httpd = HTTPServer(("", port), NotesHandler)
    httpd.token_hash = token_hash
    httpd.serve_forever()
