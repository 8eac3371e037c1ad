//! Rows the database keeps already rendered as JSON (orders, reviews), and the keyset
//! position lists page on. Storage fills these; `http::page` answers them.

/// The keyset position of the "newest first" lists: a timestamp and an id, as text.
pub type Position = (String, String);

/// A row we already rendered as JSON ourselves (an order's stored body), answered as is.
#[derive(Debug, Clone)]
pub struct RenderedJson(pub String);

/// The rows of a page the database holds already rendered, written by the query straight
/// into what becomes the response body: `{"data":[` then the rows, comma-separated. A page
/// costs one buffer and one copy of each row. Rows are JSON we wrote ourselves, so they are
/// not parsed again to prove it.
#[derive(Debug)]
pub struct RenderedRows {
    body: Vec<u8>,
    /// Where the body ends after each row, to drop the extra row fetched for `has_more`.
    ends: Vec<usize>,
    limit: usize,
    /// The position of the page's last row: the only one a `next_cursor` can name.
    last: Option<Position>,
}

impl RenderedRows {
    pub fn new(limit: usize) -> Self {
        // An order is most of a KiB; the rest is room for the envelope's tail.
        let mut body = Vec::with_capacity((limit + 1) * 1024 + 256);
        body.extend_from_slice(br#"{"data":["#);
        Self {
            body,
            ends: Vec::with_capacity(limit + 1),
            limit,
            last: None,
        }
    }

    /// The rows to fetch: one more than the page, to learn whether another page follows.
    pub fn fetch(&self) -> usize {
        self.limit + 1
    }

    /// Appends a row in list order. `position` is asked only of the page's last row, so the
    /// others cost no keyset values.
    pub fn push<E>(
        &mut self,
        json: &[u8],
        position: impl FnOnce() -> Result<Position, E>,
    ) -> Result<(), E> {
        if self.ends.len() + 1 == self.limit {
            self.last = Some(position()?);
        }
        if !self.ends.is_empty() {
            self.body.push(b',');
        }
        self.body.extend_from_slice(json);
        self.ends.push(self.body.len());
        Ok(())
    }

    pub fn has_more(&self) -> bool {
        self.ends.len() > self.limit
    }

    /// The position of the page's last row, when the page is full.
    pub fn last(&self) -> Option<&Position> {
        self.last.as_ref()
    }

    /// The body so far (`{"data":[` and the page's rows, without the extra one) and whether
    /// another page follows; the caller closes the envelope.
    pub fn finish(self) -> (Vec<u8>, bool) {
        let has_more = self.has_more();
        let mut body = self.body;
        if has_more {
            body.truncate(self.ends[self.limit - 1]);
        }
        (body, has_more)
    }
}
