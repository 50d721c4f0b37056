"""The notes service: storage, search and a small HTTP API."""
