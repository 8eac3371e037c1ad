//! A campaign's markdown as the HTML part of its mail: rendered with pulldown-cmark, then
//! cleaned by ammonia's allow-list (no script, no event handlers, no `javascript:` links),
//! so what a merchant pastes cannot run in a customer's mail client.

use pulldown_cmark::{Options, Parser, html::push_html};

/// The sanitised HTML of `markdown`.
pub fn html(markdown: &str) -> String {
    let mut raw = String::with_capacity(markdown.len() * 3 / 2);
    push_html(
        &mut raw,
        Parser::new_ext(
            markdown,
            Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH,
        ),
    );
    ammonia::Builder::default()
        .link_rel(Some("noopener noreferrer"))
        .clean(&raw)
        .to_string()
}

/// The mail's HTML document: the body and the unsubscribe link under it.
pub fn with_footer(body_html: &str, unsubscribe: &str) -> String {
    let link = html_escape(unsubscribe);
    format!(
        "<!doctype html><html><body>{body_html}<hr><p style=\"font-size:small\">\
         <a href=\"{link}\">Unsubscribe</a> from these e-mails.</p></body></html>"
    )
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::html;

    #[test]
    fn markdown_renders_and_scripts_do_not() {
        let out = html(
            "# Sale\n\n**20%** off <script>alert(1)</script> [shop](https://shop.example) \
             [x](javascript:alert(1)) <img src=x onerror=alert(1)>",
        );
        assert!(out.contains("<h1>Sale</h1>"), "{out}");
        assert!(out.contains("<strong>20%</strong>"), "{out}");
        assert!(out.contains("href=\"https://shop.example\""), "{out}");
        assert!(!out.contains("<script"), "{out}");
        assert!(!out.contains("javascript:"), "{out}");
        assert!(!out.contains("onerror"), "{out}");
    }
}
