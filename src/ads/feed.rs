//! The product feed in Google Merchant Center's RSS 2.0 format (`xmlns:g`), written with
//! quick-xml so every text and attribute is escaped.

use std::io;

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use super::model::FeedItem;

/// Google's namespace for the product attributes.
pub const G_NS: &str = "http://base.google.com/ns/1.0";

/// Drops the characters XML 1.0 cannot hold even escaped (C0 controls other than tab, line
/// feed and carriage return; U+FFFE, U+FFFF), so a stray one in a title cannot make the
/// whole feed unreadable.
fn xml_safe(s: &str) -> String {
    s.chars()
        .filter(|&c| {
            matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
        })
        .collect()
}

fn text_element(w: &mut Writer<Vec<u8>>, name: &str, value: &str) -> io::Result<()> {
    w.create_element(name)
        .write_text_content(BytesText::new(&xml_safe(value)))?;
    Ok(())
}

/// The feed document: the channel named for the store, one `<item>` per feed item.
pub fn write(store_name: &str, site: &str, items: &[FeedItem]) -> io::Result<Vec<u8>> {
    let mut w = Writer::new_with_indent(Vec::with_capacity(512 + items.len() * 700), b' ', 2);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("rss")
        .with_attribute(("version", "2.0"))
        .with_attribute(("xmlns:g", G_NS))
        .write_inner_content(|w| {
            w.create_element("channel").write_inner_content(|w| {
                text_element(w, "title", store_name)?;
                text_element(w, "link", site)?;
                text_element(w, "description", &format!("Products of {store_name}"))?;
                for it in items {
                    w.create_element("item").write_inner_content(|w| {
                        text_element(w, "g:id", &it.id)?;
                        text_element(w, "g:item_group_id", &it.item_group_id)?;
                        text_element(w, "g:title", &it.title)?;
                        text_element(w, "g:description", &it.description)?;
                        text_element(w, "g:link", &it.link)?;
                        text_element(w, "g:image_link", &it.image_link)?;
                        text_element(w, "g:availability", &it.availability)?;
                        text_element(w, "g:price", &it.price)?;
                        text_element(w, "g:condition", &it.condition)
                    })?;
                }
                Ok(())
            })?;
            Ok(())
        })?;
    Ok(w.into_inner())
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_dropped() {
        assert_eq!(super::xml_safe("a\u{1}b\tc\u{FFFF}"), "ab\tc");
    }
}
