//! Brand system DTOs (spec 2.11). Every key of `system` is required and typed; unknown keys
//! are refused, so a misspelt key is a 422 naming it rather than data silently dropped. The
//! spec leaves the shapes of the arrays' elements open (2.13): they are any JSON values.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// Any JSON values: the spec does not fix the elements' shape.
pub type Items = Vec<Value>;

/// The schema of [`Items`]: an array of anything (utoipa would say objects), at most
/// [`MAX_ITEMS`](super::system::MAX_ITEMS) long.
fn any_items() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType};
    ArrayBuilder::new()
        .items(ObjectBuilder::new().schema_type(SchemaType::AnyValue))
        .max_items(Some(super::system::MAX_ITEMS))
        .build()
}

/// A string that is one of `values`.
fn one_of(values: &[&str]) -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
        .build()
}

/// The schema of `email.button_shape`.
fn button_shapes() -> utoipa::openapi::schema::Object {
    one_of(super::system::BUTTON_SHAPES)
}

/// The schema of `typography.heading_transform`.
fn heading_transforms() -> utoipa::openapi::schema::Object {
    one_of(super::system::HEADING_TRANSFORMS)
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
    #[schema(max_length = 100000)]
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
    #[schema(minimum = 1, maximum = 1)]
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
    /// http(s) URL or null; sent either way (null when there is none), as the two logos are.
    #[serde(deserialize_with = "nullable")]
    #[schema(
        required = true,
        max_length = 2048,
        pattern = r"^https?://[a-z0-9]+(\.[a-z0-9]+)*(:[0-9]{1,4})?(/[A-Za-z0-9._~-]*)*$"
    )]
    pub favicon_url: Option<String>,
    #[serde(deserialize_with = "nullable")]
    #[schema(
        required = true,
        max_length = 2048,
        pattern = r"^https?://[a-z0-9]+(\.[a-z0-9]+)*(:[0-9]{1,4})?(/[A-Za-z0-9._~-]*)*$"
    )]
    pub logo_url: Option<String>,
    #[serde(deserialize_with = "nullable")]
    #[schema(
        required = true,
        max_length = 2048,
        pattern = r"^https?://[a-z0-9]+(\.[a-z0-9]+)*(:[0-9]{1,4})?(/[A-Za-z0-9._~-]*)*$"
    )]
    pub logo_dark_url: Option<String>,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub images: Items,
    /// Pixels, 1 to 2,000.
    #[schema(minimum = 1, maximum = 2000)]
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
        pub struct ColorAliases {
            $(
                #[schema(pattern = r"^#[0-9A-Fa-f]{6}$", example = "#111827")]
                pub $name: String
            ),*
        }

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
    #[schema(schema_with = button_shapes)]
    pub button_shape: String,
    /// Pixels, 320 to 1,200.
    #[schema(minimum = 320, maximum = 1200)]
    pub width: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Footer {
    #[schema(max_length = 2000)]
    pub address: String,
    #[schema(max_length = 2000)]
    pub company: String,
    #[schema(max_length = 2000)]
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
    #[schema(max_length = 2000)]
    pub notes: String,
    #[schema(max_length = 2000)]
    pub set: String,
    #[schema(max_length = 2000)]
    pub stroke: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    #[schema(max_length = 2000)]
    pub audience: String,
    /// The brand's name, 1 to 120 characters.
    #[schema(min_length = 1, max_length = 120, pattern = r"\S")]
    pub name: String,
    #[schema(max_length = 2000)]
    pub origin: String,
    #[schema(max_length = 2000)]
    pub since: String,
    #[schema(max_length = 10000)]
    pub story: String,
    #[schema(max_length = 2000)]
    pub tagline: String,
    #[schema(max_length = 2000)]
    pub wordmark: String,
    #[schema(max_length = 2000)]
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
    #[schema(max_length = 64)]
    pub frame_radius: String,
    #[schema(max_length = 2000)]
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
    #[schema(minimum = 1, maximum = 64)]
    pub base_px: i32,
    #[schema(max_length = 64)]
    pub container_max: String,
    #[schema(max_length = 64)]
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
    #[schema(minimum = 8, maximum = 48)]
    pub base_size_px: i32,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub families: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub font_sources: Items,
    /// A CSS `text-transform`: `none`, `uppercase`, `lowercase` or `capitalize`.
    #[schema(schema_with = heading_transforms)]
    pub heading_transform: String,
    /// 100 to 900, in hundreds.
    #[schema(minimum = 100, maximum = 900, multiple_of = 100)]
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
    #[schema(schema_with = any_items)]
    pub r#do: Items,
    #[schema(value_type = Vec<Object>)]
    #[schema(schema_with = any_items)]
    pub dont: Items,
    pub emoji: bool,
    /// A language tag such as `pt-BR`.
    #[schema(pattern = r"^[A-Za-z0-9-]{2,35}$")]
    pub language: String,
    #[schema(max_length = 64)]
    pub person: String,
    #[schema(max_length = 2000)]
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
    #[schema(max_length = 4000)]
    pub prompt: Option<String>,
    /// What changed, at most 500 characters.
    #[schema(max_length = 500)]
    pub summary: Option<String>,
}

/// `POST .../brand-system/generate`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GenerateIn {
    /// What the new system should be, 1 to 4,000 characters.
    #[schema(min_length = 1, max_length = 4000, pattern = r"\S")]
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
