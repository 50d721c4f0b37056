"""Persistent storage of notes in a SQLite database."""

import sqlite3
import time
from dataclasses import dataclass


@dataclass
class Note:
    id: int
    title: str
    body: str
    tags: list
    created_at: float
    archived: bool = False


class NoteStore:
    """Keeps notes in one SQLite file and hands out Note objects."""

    def __init__(self, path):
        self.conn = sqlite3.connect(path)
        self._migrate()

    def _migrate(self):
        # Create the tables on first use; later versions add columns here.
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS notes ("
            "id INTEGER PRIMARY KEY, title TEXT, body TEXT, tags TEXT, "
            "created_at REAL, archived INTEGER DEFAULT 0)"
        )
        self.conn.commit()

    def add(self, title, body, tags=()):
        cur = self.conn.execute(
            "INSERT INTO notes (title, body, tags, created_at) VALUES (?, ?, ?, ?)",
            (title, body, ",".join(tags), time.time()),
        )
        self.conn.commit()
        return self.get(cur.lastrowid)

    def get(self, note_id):
        row = self.conn.execute(
            "SELECT id, title, body, tags, created_at, archived FROM notes WHERE id = ?",
            (note_id,),
        ).fetchone()
        if row is None:
            raise KeyError(note_id)
        return _row_to_note(row)

    def archive(self, note_id):
        """Hide a note from listings without deleting it."""
        self.conn.execute("UPDATE notes SET archived = 1 WHERE id = ?", (note_id,))
        self.conn.commit()

    def delete(self, note_id):
        self.conn.execute("DELETE FROM notes WHERE id = ?", (note_id,))
        self.conn.commit()

    def list_recent(self, limit=20):
        rows = self.conn.execute(
            "SELECT id, title, body, tags, created_at, archived FROM notes "
            "WHERE archived = 0 ORDER BY created_at DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [_row_to_note(r) for r in rows]


def _row_to_note(row):
    tags = [t for t in row[3].split(",") if t]
    return Note(row[0], row[1], row[2], tags, row[4], bool(row[5]))
