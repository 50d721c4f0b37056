// Client for the notes HTTP API.

export interface NoteSummary {
  id: number;
  title: string;
}

export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

export class NotesClient {
  constructor(private baseUrl: string, private token: string) {}

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(this.baseUrl + path, {
      method,
      headers: {
        Authorization: `Bearer ${this.token}`,
        "Content-Type": "application/json",
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) {
      throw new ApiError(res.status, await res.text());
    }
    return (await res.json()) as T;
  }

  listNotes(): Promise<NoteSummary[]> {
    return this.request("GET", "/");
  }

  createNote(title: string, body: string, tags: string[] = []): Promise<{ id: number }> {
    return this.request("POST", "/", { title, body, tags });
  }

  search(query: string): Promise<{ id: number; excerpt: string }[]> {
    return this.request("GET", "/search?q=" + encodeURIComponent(query));
  }
}

export async function withRetry<T>(fn: () => Promise<T>, attempts = 3, delayMs = 200): Promise<T> {
  let lastErr: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await fn();
    } catch (err) {
      lastErr = err;
      if (err instanceof ApiError && err.status < 500) {
        throw err;
      }
      await new Promise((r) => setTimeout(r, delayMs * 2 ** i));
    }
  }
  throw lastErr;
}
