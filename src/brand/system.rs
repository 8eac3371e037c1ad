//! What makes a brand system valid beyond its types (which serde checks), the default a new
//! store starts with, and reading one out of a model's answer.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::model::{
    Assets, BrandSystem, ColorAliases, Colors, Effects, Email, Footer, Iconography, Identity,
    Imagery, Items, Spacing, Typography, Voice,
};
use crate::error::AppError;

/// The shape version this server reads and writes.
pub const SCHEMA_VERSION: i32 = 1;
/// The most items any of the system's arrays may hold.
pub const MAX_ITEMS: usize = 200;
/// The most characters of an ordinary text field.
const MAX_TEXT: usize = 2_000;
/// `email.button_shape`'s values.
pub const BUTTON_SHAPES: &[&str] = &["square", "rounded", "pill"];
/// `typography.heading_transform`'s values.
pub const HEADING_TRANSFORMS: &[&str] = &["none", "uppercase", "lowercase", "capitalize"];
/// The largest system, as JSON.
pub const MAX_BYTES: usize = 256 * 1024;

/// Problems found, by JSON path (`system.colors.aliases.link`).
#[derive(Default)]
struct Problems(BTreeMap<String, String>);

impl Problems {
    fn add(&mut self, path: &str, msg: impl Into<String>) {
        self.0.entry(format!("system.{path}")).or_insert(msg.into());
    }

    fn text(&mut self, path: &str, v: &str, min: usize, max: usize) {
        let n = v.trim().chars().count();
        if n < min || n > max {
            self.add(path, format!("must be {min} to {max} characters"));
        }
    }

    fn range(&mut self, path: &str, v: i32, min: i32, max: i32) {
        if v < min || v > max {
            self.add(path, format!("must be {min} to {max}"));
        }
    }

    fn items(&mut self, path: &str, v: &Items) {
        if v.len() > MAX_ITEMS {
            self.add(path, format!("at most {MAX_ITEMS} items"));
        }
    }

    fn url(&mut self, path: &str, v: Option<&str>) {
        let Some(v) = v else { return };
        let ok = v.len() <= 2048
            && url::Url::parse(v).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
        if !ok {
            self.add(path, "must be an http(s) URL or null");
        }
    }

    fn one_of(&mut self, path: &str, v: &str, allowed: &[&str]) {
        if !allowed.contains(&v) {
            self.add(path, format!("must be one of: {}", allowed.join(", ")));
        }
    }
}

/// `#RRGGBB`.
pub fn is_hex_color(v: &str) -> bool {
    v.len() == 7 && v.starts_with('#') && v[1..].chars().all(|c| c.is_ascii_hexdigit())
}

/// Checks the values of a system whose types serde already checked: 422
/// `validation_failed` with every problem in `details.fields`, by JSON path under `system`.
pub fn check(s: &BrandSystem) -> Result<(), AppError> {
    let mut p = Problems::default();
    if s.schema_version != SCHEMA_VERSION {
        p.add("schema_version", format!("must be {SCHEMA_VERSION}"));
    }
    let a = &s.assets;
    p.url("assets.favicon_url", a.favicon_url.as_deref());
    p.url("assets.logo_url", a.logo_url.as_deref());
    p.url("assets.logo_dark_url", a.logo_dark_url.as_deref());
    p.items("assets.images", &a.images);
    p.range("assets.logo_width", a.logo_width, 1, 2000);
    p.items("changelog", &s.changelog);
    let c = &s.colors;
    for (name, v) in c.aliases.all() {
        if !is_hex_color(v) {
            p.add(&format!("colors.aliases.{name}"), "must be a #RRGGBB color");
        }
    }
    for (name, v) in [
        ("accents", &c.accents),
        ("brand", &c.brand),
        ("rules", &c.rules),
        ("scales", &c.scales),
        ("semantic", &c.semantic),
    ] {
        p.items(&format!("colors.{name}"), v);
    }
    p.items("components", &s.components);
    let e = &s.effects;
    for (name, v) in [
        ("borders", &e.borders),
        ("durations", &e.durations),
        ("easing", &e.easing),
        ("rings", &e.rings),
        ("rules", &e.rules),
        ("shadows", &e.shadows),
    ] {
        p.items(&format!("effects.{name}"), v);
    }
    p.one_of("email.button_shape", &s.email.button_shape, BUTTON_SHAPES);
    p.range("email.width", s.email.width, 320, 1200);
    let f = &s.footer;
    p.text("footer.address", &f.address, 0, MAX_TEXT);
    p.text("footer.company", &f.company, 0, MAX_TEXT);
    p.text("footer.extra", &f.extra, 0, MAX_TEXT);
    p.items("footer.social", &f.social);
    p.text("guide_md", &s.guide_md, 0, 100_000);
    let i = &s.iconography;
    p.items("iconography.glyphs", &i.glyphs);
    p.text("iconography.notes", &i.notes, 0, MAX_TEXT);
    p.text("iconography.set", &i.set, 0, MAX_TEXT);
    p.text("iconography.stroke", &i.stroke, 0, MAX_TEXT);
    let id = &s.identity;
    p.text("identity.name", &id.name, 1, 120);
    for (name, v) in [
        ("audience", &id.audience),
        ("origin", &id.origin),
        ("since", &id.since),
        ("tagline", &id.tagline),
        ("wordmark", &id.wordmark),
        ("wordmark_rules", &id.wordmark_rules),
    ] {
        p.text(&format!("identity.{name}"), v, 0, MAX_TEXT);
    }
    p.text("identity.story", &id.story, 0, 10_000);
    p.items("identity.values", &id.values);
    let im = &s.imagery;
    p.items("imagery.avoid", &im.avoid);
    p.text("imagery.frame_radius", &im.frame_radius, 0, 64);
    p.text("imagery.style", &im.style, 0, MAX_TEXT);
    p.items("imagery.subjects", &im.subjects);
    p.items("imagery.treatment", &im.treatment);
    p.items("open_questions", &s.open_questions);
    p.items("radii", &s.radii);
    p.items("sources", &s.sources);
    let sp = &s.spacing;
    p.range("spacing.base_px", sp.base_px, 1, 64);
    p.text("spacing.container_max", &sp.container_max, 0, 64);
    p.text("spacing.gutters", &sp.gutters, 0, 64);
    p.items("spacing.rules", &sp.rules);
    p.items("spacing.scale", &sp.scale);
    let t = &s.typography;
    p.range("typography.base_size_px", t.base_size_px, 8, 48);
    p.one_of(
        "typography.heading_transform",
        &t.heading_transform,
        HEADING_TRANSFORMS,
    );
    if t.heading_weight % 100 != 0 {
        p.add(
            "typography.heading_weight",
            "must be 100 to 900, in hundreds",
        );
    } else {
        p.range("typography.heading_weight", t.heading_weight, 100, 900);
    }
    for (name, v) in [
        ("families", &t.families),
        ("font_sources", &t.font_sources),
        ("leading", &t.leading),
        ("rules", &t.rules),
        ("scale", &t.scale),
        ("tracking", &t.tracking),
        ("weights", &t.weights),
    ] {
        p.items(&format!("typography.{name}"), v);
    }
    let v = &s.voice;
    for (name, items) in [
        ("casing", &v.casing),
        ("conventions", &v.conventions),
        ("do", &v.r#do),
        ("dont", &v.dont),
        ("sample_copy", &v.sample_copy),
        ("tone", &v.tone),
    ] {
        p.items(&format!("voice.{name}"), items);
    }
    let lang_ok = (2..=35).contains(&v.language.len())
        && v.language
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !lang_ok {
        p.add("voice.language", "must be a language tag such as pt-BR");
    }
    p.text("voice.person", &v.person, 0, 64);
    p.text("voice.signoff", &v.signoff, 0, MAX_TEXT);
    if p.0.is_empty() {
        let bytes = serde_json::to_vec(s).map_err(AppError::internal)?.len();
        if bytes > MAX_BYTES {
            p.add("", format!("at most {MAX_BYTES} bytes of JSON"));
        }
    }
    if p.0.is_empty() {
        return Ok(());
    }
    // The whole system's own problem is named `system`, not `system.`.
    Err(AppError::validation(
        p.0.into_iter()
            .map(|(k, v)| (k.trim_end_matches('.').to_owned(), v)),
    ))
}

fn strings(v: &[&str]) -> Items {
    v.iter().map(|s| json!(s)).collect()
}

/// The system a new store starts with: its name as the brand's, a neutral palette, system
/// fonts and a plain voice, for the merchant to make their own.
pub fn default_for(name: &str, updated_at: &str) -> BrandSystem {
    let name: String = name.trim().chars().take(120).collect();
    let name = if name.is_empty() {
        "My store".to_owned()
    } else {
        name
    };
    let mut aliases = ColorAliases::filled("#111827");
    aliases.action_primary_hover = "#000000".into();
    for text_on_dark in [
        &mut aliases.action_primary_text,
        &mut aliases.text_inverse,
        &mut aliases.surface_card,
        &mut aliases.surface_page,
    ] {
        *text_on_dark = "#FFFFFF".into();
    }
    aliases.action_secondary = "#F3F4F6".into();
    aliases.surface_muted = "#F3F4F6".into();
    aliases.border = "#E5E7EB".into();
    aliases.border_strong = "#9CA3AF".into();
    aliases.text_muted = "#6B7280".into();
    aliases.text_caption = "#6B7280".into();
    aliases.link = "#1D4ED8".into();
    aliases.error = "#B91C1C".into();
    aliases.sale = "#B91C1C".into();
    aliases.success = "#15803D".into();
    BrandSystem {
        assets: Assets {
            favicon_url: None,
            logo_url: None,
            logo_dark_url: None,
            images: Vec::new(),
            logo_width: 160,
        },
        changelog: Vec::new(),
        colors: Colors {
            accents: Vec::new(),
            aliases,
            brand: vec![json!({"name": "ink", "hex": "#111827"})],
            rules: Vec::new(),
            scales: Vec::new(),
            semantic: Vec::new(),
        },
        components: Vec::new(),
        effects: Effects {
            borders: Vec::new(),
            durations: Vec::new(),
            easing: Vec::new(),
            rings: Vec::new(),
            rules: Vec::new(),
            shadows: Vec::new(),
        },
        email: Email {
            button_shape: "rounded".into(),
            width: 600,
        },
        footer: Footer {
            address: String::new(),
            company: name.clone(),
            extra: String::new(),
            social: Vec::new(),
        },
        guide_md: format!("# {name}\n\nThe brand guide of {name}.\n"),
        iconography: Iconography {
            glyphs: Vec::new(),
            notes: String::new(),
            set: "outline".into(),
            stroke: "1.5px".into(),
        },
        identity: Identity {
            audience: String::new(),
            name: name.clone(),
            origin: String::new(),
            since: String::new(),
            story: String::new(),
            tagline: String::new(),
            wordmark: name,
            wordmark_rules: String::new(),
            values: Vec::new(),
        },
        imagery: Imagery {
            avoid: Vec::new(),
            frame_radius: "8px".into(),
            style: String::new(),
            subjects: Vec::new(),
            treatment: Vec::new(),
        },
        open_questions: Vec::new(),
        radii: strings(&["4px", "8px", "16px"]),
        schema_version: SCHEMA_VERSION,
        sources: Vec::new(),
        spacing: Spacing {
            base_px: 4,
            container_max: "1200px".into(),
            gutters: "16px".into(),
            rules: Vec::new(),
            scale: vec![
                json!(4),
                json!(8),
                json!(12),
                json!(16),
                json!(24),
                json!(32),
            ],
        },
        typography: Typography {
            base_size_px: 16,
            families: vec![json!({"role": "body", "family": "system-ui, sans-serif"})],
            font_sources: Vec::new(),
            heading_transform: "none".into(),
            heading_weight: 700,
            leading: Vec::new(),
            rules: Vec::new(),
            scale: Vec::new(),
            tracking: Vec::new(),
            weights: vec![json!(400), json!(700)],
        },
        updated_at: updated_at.to_owned(),
        voice: Voice {
            casing: Vec::new(),
            conventions: Vec::new(),
            r#do: Vec::new(),
            dont: Vec::new(),
            emoji: false,
            language: "pt-BR".into(),
            person: "second".into(),
            signoff: String::new(),
            sample_copy: Vec::new(),
            tone: strings(&["friendly", "clear"]),
        },
    }
}

/// The system in a model's answer: the JSON object in its text (a fenced code block or
/// words around it are tolerated), typed and checked as a PUT's would be. The error names
/// the problem by JSON path, as a PUT's 422 does.
pub fn from_answer(text: &str) -> Result<BrandSystem, AppError> {
    let (start, end) = (text.find('{'), text.rfind('}'));
    let json = match (start, end) {
        (Some(s), Some(e)) if s < e => &text[s..=e],
        _ => return Err(AppError::bad_request("the answer holds no JSON object")),
    };
    // An answer may wrap the system as {"system": {...}}, as the PUT body does.
    let value: Value = serde_json::from_str(json)
        .map_err(|e| AppError::bad_request(format!("the answer is not JSON: {e}")))?;
    let inner = match value.get("system") {
        Some(s) if s.is_object() => s.to_string(),
        _ => json.to_owned(),
    };
    // Read as a PUT body's `system`, so problems are named by the same paths.
    #[derive(serde::Deserialize)]
    struct Wrapped {
        system: BrandSystem,
    }
    let wrapped = format!(r#"{{"system":{inner}}}"#);
    let Wrapped { system } = crate::http::extract::parse_json(wrapped.as_bytes())?;
    check(&system)?;
    Ok(system)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_valid_and_named_after_the_store() {
        let s = default_for("Loja da Ana", "2026-01-01T00:00:00Z");
        check(&s).unwrap();
        assert_eq!(s.identity.name, "Loja da Ana");
        assert!(is_hex_color("#0aF09b") && !is_hex_color("0aF09b") && !is_hex_color("#0aF09"));
    }

    #[test]
    fn an_answer_in_a_code_block_is_read() {
        let s = default_for("X", "t");
        let text = format!(
            "Here it is:\n```json\n{}\n```",
            serde_json::to_string(&s).unwrap()
        );
        assert_eq!(from_answer(&text).unwrap(), s);
        assert!(from_answer("no json here").is_err());
    }
}
