// The note editor: a textarea with autosave and a word count.

import { NotesClient } from "./api";

export function debounce<A extends unknown[]>(fn: (...args: A) => void, waitMs: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return (...args: A) => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => fn(...args), waitMs);
  };
}

export const countWords = (text: string): number =>
  text.trim() === "" ? 0 : text.trim().split(/\s+/).length;

export class Editor {
  private saved = "";

  constructor(private client: NotesClient, private area: HTMLTextAreaElement, private status: HTMLElement) {
    const save = debounce(() => this.autosave(), 1000);
    area.addEventListener("input", () => {
      this.status.textContent = `${countWords(area.value)} words`;
      save();
    });
  }

  async autosave(): Promise<void> {
    const text = this.area.value;
    if (text === this.saved) return;
    const [title, ...rest] = text.split("\n");
    await this.client.createNote(title, rest.join("\n"));
    this.saved = text;
    this.status.textContent = "saved";
  }
}
