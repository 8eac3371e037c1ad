//! Brand system DTOs (spec 2.11). Every key of `system` is required and typed; unknown keys
//! are refused, so a misspelt key is a 422 naming it rather than data silently dropped. The
//! spec leaves the shapes of the arrays' elements open (2.13): they are any JSON values.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// Any JSON values: the spec does not fix the elements' shape.
pub type Items = Vec<Value>;

/// The schema of [`Items`]: an array of anything (utoipa would say objects).
fn any_items() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{Array, ObjectBuilder, SchemaType};
    Array::new(ObjectBuilder::new().schema_type(SchemaType::AnyValue))
}

/// A nullable field that must still be sent (serde would take a missing `Option` as null).
fn nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(d)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BrandSystem {
    pub assets: Assets,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub changelog: Items,
    pub colors: Colors,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub components: Items,
    pub effects: Effects,
    pub email: Email,
    pub footer: Footer,
    /// The brand guide in Markdown.
    pub guide_md: String,
    pub iconography: Iconography,
    pub identity: Identity,
    pub imagery: Imagery,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub open_questions: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub radii: Items,
    /// The shape's version: 1.
    pub schema_version: i32,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub sources: Items,
    pub spacing: Spacing,
    pub typography: Typography,
    /// Set by the server to the time the version was saved (what is sent is replaced).
    pub updated_at: String,
    pub voice: Voice,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Assets {
    /// http(s) URL or null.
    #[serde(deserialize_with = "nullable")]
    pub favicon_url: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub logo_url: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub logo_dark_url: Option<String>,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub images: Items,
    /// Pixels, 1 to 2,000.
    pub logo_width: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Colors {
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub accents: Items,
    pub aliases: ColorAliases,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub brand: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub rules: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub scales: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub semantic: Items,
}

macro_rules! aliases {
    ($($name:ident),* $(,)?) => {
        /// The colors the storefront and e-mails use by role, each `#RRGGBB`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct ColorAliases { $(pub $name: String),* }

        impl ColorAliases {
            /// Every alias with its name, in the struct's order.
            pub fn all(&self) -> Vec<(&'static str, &str)> {
                vec![$((stringify!($name), self.$name.as_str())),*]
            }

            /// Every alias set to one color.
            pub fn filled(color: &str) -> Self {
                Self { $($name: color.to_owned()),* }
            }
        }
    };
}

aliases!(
    action_primary,
    action_primary_hover,
    action_primary_text,
    action_secondary,
    action_secondary_text,
    border,
    border_strong,
    error,
    link,
    sale,
    success,
    surface_card,
    surface_inverse,
    surface_muted,
    surface_page,
    text_body,
    text_caption,
    text_inverse,
    text_muted,
    text_strong,
);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Effects {
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub borders: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub durations: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub easing: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub rings: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub rules: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub shadows: Items,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Email {
    /// `square`, `rounded` or `pill`.
    pub button_shape: String,
    /// Pixels, 320 to 1,200.
    pub width: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Footer {
    pub address: String,
    pub company: String,
    pub extra: String,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub social: Items,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Iconography {
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub glyphs: Items,
    pub notes: String,
    pub set: String,
    pub stroke: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    pub audience: String,
    /// The brand's name, 1 to 120 characters.
    pub name: String,
    pub origin: String,
    pub since: String,
    pub story: String,
    pub tagline: String,
    pub wordmark: String,
    pub wordmark_rules: String,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub values: Items,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Imagery {
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub avoid: Items,
    pub frame_radius: String,
    pub style: String,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub subjects: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub treatment: Items,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Spacing {
    /// Pixels, 1 to 64.
    pub base_px: i32,
    pub container_max: String,
    pub gutters: String,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub rules: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub scale: Items,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Typography {
    /// Pixels, 8 to 48.
    pub base_size_px: i32,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub families: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub font_sources: Items,
    /// A CSS `text-transform`: `none`, `uppercase`, `lowercase` or `capitalize`.
    pub heading_transform: String,
    /// 100 to 900, in hundreds.
    pub heading_weight: i32,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub leading: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub rules: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub scale: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub tracking: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub weights: Items,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Voice {
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub casing: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub conventions: Items,
    #[schema(value_type = Vec<Object>)]
    pub r#do: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub dont: Items,
    pub emoji: bool,
    /// A language tag such as `pt-BR`.
    pub language: String,
    pub person: String,
    pub signoff: String,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub sample_copy: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub tone: Items,
}

/// `PUT .../brand-system`: the whole new system, and what the merchant says about it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BrandSystemIn {
    pub system: BrandSystem,
    /// What was asked for, at most 4,000 characters.
    pub prompt: Option<String>,
    /// What changed, at most 500 characters.
    pub summary: Option<String>,
}

/// `POST .../brand-system/generate`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GenerateIn {
    /// What the new system should be, 1 to 4,000 characters.
    pub prompt: String,
}

/// One saved version, as the version list shows it (its system is not repeated).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BrandVersionOut {
    pub created_at: String,
    /// `""` when none was given.
    pub prompt: String,
    /// `""` when none was given.
    pub summary: String,
    pub version: i32,
}

/// The brand system response (spec 2.11): the current system, its version, and every
/// version newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BrandSystemOut {
    pub system: BrandSystem,
    pub version: i32,
    pub versions: Vec<BrandVersionOut>,
}
