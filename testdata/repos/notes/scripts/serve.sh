#!/bin/sh
# Start the notes server. PORT and NOTES_DB may be set in the environment.
set -eu

PORT="${PORT:-8080}"
NOTES_DB="${NOTES_DB:-notes.db}"

python3 -c "from notes.server import serve; serve($PORT, '$NOTES_DB', '$NOTES_TOKEN_HASH')"
