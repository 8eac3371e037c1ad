//! Answering rows the database keeps already rendered (`db::rendered`): one row as is, and a
//! page of them in the [`super::Page`] envelope, written without a serializer.

use crate::db::rendered::{RenderedJson, RenderedRows};

impl axum::response::IntoResponse for RenderedJson {
    fn into_response(self) -> axum::response::Response {
        json_response(self.0)
    }
}

fn json_response(body: impl Into<axum::body::Body>) -> axum::response::Response {
    use axum::http::{HeaderValue, header};
    let mut res = axum::response::Response::new(body.into());
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// A [`Page`] of [`RenderedRows`]: the same envelope, written without a serializer.
#[derive(Debug)]
pub struct RenderedPage {
    pub(super) rows: RenderedRows,
    pub(super) next_cursor: Option<String>,
    pub(super) total: Option<i64>,
}

impl axum::response::IntoResponse for RenderedPage {
    fn into_response(self) -> axum::response::Response {
        let (mut body, has_more) = self.rows.finish();
        body.extend_from_slice(br#"],"has_more":"#);
        body.extend_from_slice(if has_more { b"true" } else { b"false" });
        body.extend_from_slice(br#","next_cursor":"#);
        match &self.next_cursor {
            // Cursors are base64url and '.': nothing to escape, but quote them properly.
            Some(c) => {
                body.extend_from_slice(serde_json::Value::from(c.as_str()).to_string().as_bytes());
            }
            None => body.extend_from_slice(b"null"),
        }
        if let Some(total) = self.total {
            body.extend_from_slice(format!(r#","total":{total}"#).as_bytes());
        }
        body.push(b'}');
        // The buffer was sized for rows of a KiB; a page of short rows gives the rest back
        // rather than holding it while the body is sent.
        if body.capacity() > 2 * body.len() {
            body.shrink_to_fit();
        }
        json_response(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::page::Page;

    #[tokio::test]
    async fn a_page_of_rendered_rows_is_the_same_json_as_a_serialized_page() {
        use axum::response::IntoResponse;
        let rows = [
            serde_json::json!({"id": "a", "n": 1, "s": "é\"q"}),
            serde_json::json!({"id": "b", "nested": {"x": [1, 2]}}),
            serde_json::json!({"id": "c"}),
        ];
        // (limit, rows fetched): 2 of 3 (one more follows), 1 of 2, all 3 on a last page,
        // and an empty list.
        for (limit, fetched, next_cursor, total) in [
            (2, 3, Some("abc.DEF-_".to_owned()), Some(7)),
            (1, 2, Some("x.y".to_owned()), None),
            (3, 3, None, None),
            (2, 0, None, Some(0)),
        ] {
            let mut found = RenderedRows::new(limit);
            let mut asked = Vec::new();
            for (i, r) in rows.iter().enumerate().take(fetched) {
                found
                    .push(r.to_string().as_bytes(), || {
                        asked.push(i);
                        Ok::<_, ()>((format!("t{i}"), format!("id{i}")))
                    })
                    .unwrap();
            }
            let last = (fetched >= limit).then_some(limit - 1);
            assert_eq!(
                asked,
                Vec::from_iter(last),
                "only the page's last row is asked its position"
            );
            assert_eq!(found.has_more(), next_cursor.is_some());
            let rendered = RenderedPage {
                rows: found,
                next_cursor: next_cursor.clone(),
                total,
            }
            .into_response();
            assert_eq!(
                rendered.headers()["content-type"],
                "application/json",
                "content type"
            );
            let bytes = axum::body::to_bytes(rendered.into_body(), usize::MAX)
                .await
                .unwrap();
            let got: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            let want = serde_json::to_value(Page {
                data: rows[..limit.min(fetched)].to_vec(),
                has_more: next_cursor.is_some(),
                next_cursor,
                total,
            })
            .unwrap();
            assert_eq!(got, want);
        }
    }
}
