package notes;

import java.util.ArrayList;
import java.util.List;

/** Keeps the notes of a device in step with the server. */
public class SyncClient {
    private final NotesApi api;
    private final List<Note> pending = new ArrayList<>();

    public SyncClient(NotesApi api) {
        this.api = api;
    }

    /** Queues a note edited on this device for the next push. */
    public void markDirty(Note note) {
        pending.add(note);
    }

    /** Sends every queued edit to the server and clears the queue. */
    public int pushChanges() {
        int sent = 0;
        for (Note note : pending) {
            api.upsert(note);
            sent++;
        }
        pending.clear();
        return sent;
    }

    /**
     * Picks the version to keep when a note changed on two devices:
     * the later edit wins, and on a tie the server's copy.
     */
    static Note resolveConflict(Note local, Note remote) {
        if (local.updatedAt() > remote.updatedAt()) {
            return local;
        }
        return remote;
    }
}
