//! Bulk writes with `COPY ... from stdin` in PostgreSQL's text format.
//!
//! COPY is the fastest way into PostgreSQL short of writing its files: one statement, rows
//! streamed without a round trip each, no bind parameters to build. Rows are produced on the fly
//! and sent in chunks, so a million loans never sit in memory as text, and the progress bar moves
//! with each chunk.

use std::fmt::Display;
use std::io::Write;

use indicatif::ProgressBar;
use sqlx::PgConnection;

/// Rows per chunk sent: about a megabyte of text.
const CHUNK_ROWS: usize = 10_000;

/// One row being written; fields go in the order of the COPY statement's columns.
#[derive(Default)]
pub struct CopyRow {
    buf: Vec<u8>,
    fields_in_row: usize,
}

impl CopyRow {
    /// A text field, escaped (backslash, tab, newline and carriage return have meanings in COPY).
    pub fn text(&mut self, value: &str) -> &mut Self {
        self.separate();
        for byte in value.bytes() {
            match byte {
                b'\\' => self.buf.extend_from_slice(b"\\\\"),
                b'\t' => self.buf.extend_from_slice(b"\\t"),
                b'\n' => self.buf.extend_from_slice(b"\\n"),
                b'\r' => self.buf.extend_from_slice(b"\\r"),
                other => self.buf.push(other),
            }
        }
        self
    }

    /// A number, date or instant: their text forms have no character COPY would read specially.
    pub fn value(&mut self, value: impl Display) -> &mut Self {
        self.separate();
        let _ = write!(self.buf, "{value}");
        self
    }

    /// SQL null.
    pub fn null(&mut self) -> &mut Self {
        self.separate();
        self.buf.extend_from_slice(b"\\N");
        self
    }

    pub fn optional(&mut self, value: Option<impl Display>) -> &mut Self {
        match value {
            Some(value) => self.value(value),
            None => self.null(),
        }
    }

    fn separate(&mut self) {
        if self.fields_in_row > 0 {
            self.buf.push(b'\t');
        }
        self.fields_in_row += 1;
    }

    fn end_row(&mut self) {
        self.buf.push(b'\n');
        self.fields_in_row = 0;
    }
}

/// Streams `count` rows into `statement` (a `copy <table> (<columns>) from stdin`), `write_row`
/// filling row `i`. Advances `progress` by each chunk. Answers the number of rows copied.
pub async fn copy_rows(
    conn: &mut PgConnection,
    statement: &str,
    count: usize,
    progress: &ProgressBar,
    mut write_row: impl FnMut(usize, &mut CopyRow),
) -> sqlx::Result<u64> {
    let mut copy = conn.copy_in_raw(statement).await?;
    let mut row = CopyRow::default();
    let mut sent = 0;
    while sent < count {
        let chunk = CHUNK_ROWS.min(count - sent);
        row.buf.clear();
        for i in sent..sent + chunk {
            write_row(i, &mut row);
            row.end_row();
        }
        if let Err(error) = copy.send(row.buf.as_slice()).await {
            // Leaves the connection usable; the caller's transaction then rolls back.
            let _ = copy.abort(error.to_string()).await;
            return Err(error);
        }
        sent += chunk;
        progress.inc(chunk as u64);
    }
    copy.finish().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_tab_separated_and_escaped() {
        let mut row = CopyRow::default();
        row.text("a\tb\\c\nd")
            .value(42)
            .null()
            .optional(Some("x"))
            .optional(None::<i64>);
        row.end_row();
        row.text("second");
        row.end_row();
        assert_eq!(
            String::from_utf8(row.buf).unwrap(),
            "a\\tb\\\\c\\nd\t42\t\\N\tx\t\\N\nsecond\n"
        );
    }
}
