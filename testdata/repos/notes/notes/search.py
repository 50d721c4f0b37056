"""Full-text search over notes with a tiny inverted index."""

import re
from collections import defaultdict

WORD_RE = re.compile(r"[a-z0-9]+")


def tokenize(text):
    """Lower-case words of a text, without punctuation."""
    return WORD_RE.findall(text.lower())


class SearchIndex:
    def __init__(self):
        self.postings = defaultdict(set)

    def index_note(self, note):
        for word in tokenize(note.title + " " + note.body):
            self.postings[word].add(note.id)

    def remove_note(self, note):
        for ids in self.postings.values():
            ids.discard(note.id)

    def query(self, text):
        """Ids of the notes that contain every word of text."""
        words = tokenize(text)
        if not words:
            return set()
        result = set(self.postings.get(words[0], set()))
        for w in words[1:]:
            result &= self.postings.get(w, set())
        return result


def highlight(body, words, width=40):
    """A short excerpt of body around the first matching word, marked with **."""
    lower = body.lower()
    for w in words:
        i = lower.find(w)
        if i >= 0:
            start = max(0, i - width)
            end = min(len(body), i + len(w) + width)
            return body[start:i] + "**" + body[i:i + len(w)] + "**" + body[i + len(w):end]
    return body[:2 * width]
