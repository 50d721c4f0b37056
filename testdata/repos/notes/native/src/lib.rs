//! Export notes to Markdown files.

use std::fs;
use std::io;
use std::path::Path;

pub struct ExportedNote {
    pub title: String,
    pub body: String,
}

/// Turns a title into a file name: lower case, words joined by dashes.
pub fn slugify(title: &str) -> String {
    let mut out = String::new();
    for word in title.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word.to_lowercase());
    }
    out
}

/// Writes each note to dir/<slug>.md with its title as a heading.
pub fn export_markdown(notes: &[ExportedNote], dir: &Path) -> io::Result<usize> {
    fs::create_dir_all(dir)?;
    for note in notes {
        let path = dir.join(format!("{}.md", slugify(&note.title)));
        fs::write(path, format!("# {}\n\n{}\n", note.title, note.body))?;
    }
    Ok(notes.len())
}
