#!/bin/sh
# Copy the notes database to a dated file and keep the last KEEP copies.
set -eu

NOTES_DB="${NOTES_DB:-notes.db}"
BACKUP_DIR="${BACKUP_DIR:-backups}"
KEEP="${KEEP:-7}"

rotate_backups() {
	# Delete all but the newest $KEEP backups.
	ls -1t "$BACKUP_DIR"/notes-*.db 2>/dev/null | tail -n +"$((KEEP + 1))" | while read -r old; do
		rm -f "$old"
	done
}

mkdir -p "$BACKUP_DIR"
sqlite3 "$NOTES_DB" ".backup '$BACKUP_DIR/notes-$(date +%Y%m%d-%H%M%S).db'"
rotate_backups
