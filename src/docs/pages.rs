//! The guides embedded from `assets/docs/`: each page's title, its passages (what the search
//! indexes and answers quote) and its HTML (what `GET /docs/{slug}` serves).

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "assets/docs/"]
struct Assets;

/// The guides in reading order; each is `assets/docs/{slug}.md`.
pub const SLUGS: [&str; 7] = [
    "getting-started",
    "sign-in-and-tokens",
    "webhooks",
    "orders-and-refunds",
    "inbox-and-widget",
    "assistant",
    "backups",
];

/// A section longer than this is split at paragraph boundaries, so a passage stays about
/// one topic and an answer quotes from where the question's words are.
const MAX_PASSAGE_CHARS: usize = 900;

pub struct Page {
    pub slug: &'static str,
    /// The text of the page's `# Title`.
    pub title: String,
    /// The page rendered (raw HTML in the source is shown as text, never passed through).
    pub html_body: String,
}

/// A stretch of one page under one heading: the unit the index ranks.
pub struct Passage {
    /// Index into the page list.
    pub page: usize,
    /// The section's heading; the page title for the text before the first section.
    pub heading: String,
    /// Plain text, one block (paragraph, list item, code block) per line; inline code keeps
    /// its backticks.
    pub text: String,
}

/// Reads every guide. Fails when one is missing or has no `# Title`: a packaging mistake
/// that must stop the start, not answer questions from half the documentation.
pub fn load() -> anyhow::Result<(Vec<Page>, Vec<Passage>)> {
    let mut pages = Vec::new();
    let mut passages = Vec::new();
    for (i, slug) in SLUGS.into_iter().enumerate() {
        let file = Assets::get(&format!("{slug}.md"))
            .ok_or_else(|| anyhow::anyhow!("assets/docs/{slug}.md is not embedded"))?;
        let source = std::str::from_utf8(&file.data)
            .map_err(|e| anyhow::anyhow!("assets/docs/{slug}.md is not UTF-8: {e}"))?;
        let (title, sections) = split(source);
        let title =
            title.ok_or_else(|| anyhow::anyhow!("assets/docs/{slug}.md has no `# Title`"))?;
        for (heading, blocks) in sections {
            let heading = heading.unwrap_or_else(|| title.clone());
            for text in chunks(&blocks) {
                passages.push(Passage {
                    page: i,
                    heading: heading.clone(),
                    text,
                });
            }
        }
        pages.push(Page {
            slug,
            title,
            html_body: render(source),
        });
    }
    Ok((pages, passages))
}

type Section = (Option<String>, Vec<String>);

/// The page's title and its sections: (heading, blocks of plain text).
fn split(source: &str) -> (Option<String>, Vec<Section>) {
    let mut title = None;
    let mut sections: Vec<Section> = vec![(None, Vec::new())];
    let mut heading: Option<(HeadingLevel, String)> = None;
    let mut block = String::new();
    for event in Parser::new_ext(source, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => heading = Some((level, String::new())),
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, text)) = heading.take() {
                    if level == HeadingLevel::H1 && title.is_none() {
                        title = Some(text);
                    } else {
                        sections.push((Some(text), Vec::new()));
                    }
                }
            }
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => match &mut heading {
                Some((_, h)) => h.push_str(&t),
                None => block.push_str(&t),
            },
            Event::Code(t) => match &mut heading {
                Some((_, h)) => h.push_str(&t),
                None => {
                    block.push('`');
                    block.push_str(&t);
                    block.push('`');
                }
            },
            Event::SoftBreak | Event::HardBreak => block.push(' '),
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Item
                | TagEnd::CodeBlock
                | TagEnd::TableHead
                | TagEnd::TableRow,
            ) => {
                let text = block.split_whitespace().collect::<Vec<_>>().join(" ");
                block.clear();
                if !text.is_empty()
                    && let Some((_, blocks)) = sections.last_mut()
                {
                    blocks.push(text);
                }
            }
            Event::End(TagEnd::TableCell) => block.push_str(" | "),
            _ => {}
        }
    }
    sections.retain(|(_, blocks)| !blocks.is_empty());
    (title, sections)
}

/// Joins a section's blocks into passages of at most about [`MAX_PASSAGE_CHARS`].
fn chunks(blocks: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for b in blocks {
        if !current.is_empty() && current.len() + b.len() > MAX_PASSAGE_CHARS {
            out.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push('\n');
        }
        current.push_str(b);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The page's HTML. Raw HTML in the Markdown is escaped like text: the guides are ours,
/// but the page is served from the API's origin, so nothing in it may run.
fn render(source: &str) -> String {
    let events = Parser::new_ext(source, Options::ENABLE_TABLES).map(|e| match e {
        Event::Html(t) | Event::InlineHtml(t) => Event::Text(t),
        e => e,
    });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_follow_headings_and_keep_inline_code() {
        let (title, sections) = split(
            "# Guide\n\nIntro `--flag` here.\n\n## First\n\nOne.\n\n- a\n- b\n\n## Second\n\nTwo.\n",
        );
        assert_eq!(title.as_deref(), Some("Guide"));
        assert_eq!(
            sections,
            vec![
                (None, vec!["Intro `--flag` here.".to_owned()]),
                (
                    Some("First".to_owned()),
                    vec!["One.".to_owned(), "a".to_owned(), "b".to_owned()]
                ),
                (Some("Second".to_owned()), vec!["Two.".to_owned()]),
            ]
        );
    }

    #[test]
    fn long_sections_split_between_blocks() {
        let para = "word ".repeat(60);
        let blocks = vec![para.clone(), para.clone(), para];
        let parts = chunks(&blocks);
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| p.len() <= MAX_PASSAGE_CHARS));
    }

    #[test]
    fn raw_html_is_escaped() {
        let html = render("# T\n\n<script>alert(1)</script>\n\nText <b>bold</b>.\n");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
    }

    #[test]
    fn every_guide_loads_with_a_title_and_passages() {
        let (pages, passages) = load().unwrap();
        assert_eq!(pages.len(), SLUGS.len());
        for (i, p) in pages.iter().enumerate() {
            assert!(!p.title.is_empty());
            assert!(
                passages.iter().filter(|x| x.page == i).count() >= 3,
                "{}",
                p.slug
            );
        }
    }
}
