//! Catalog DTOs (issue 6).

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

use utoipa::openapi::schema::Object;
use utoipa::openapi::{Ref, RefOr, Schema};
use utoipa::{IntoParams, PartialSchema, ToSchema};

use crate::ids::{CategoryId, ProductId, StoreId, VariantId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProductStatus {
    Draft,
    Active,
    Archived,
}

impl ProductStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Active => "active",
            Self::Archived => "archived",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "draft" => Some(Self::Draft),
            "active" => Some(Self::Active),
            "archived" => Some(Self::Archived),
            _ => None,
        }
    }
}

/// A variant in a create or update body. On update, one with `id` changes that variant,
/// one without is added, and the product's variants not listed are removed. The documents
/// describe its two uses ([`NewVariantIn`], [`VariantChangeIn`]) rather than this union.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VariantIn {
    pub id: Option<VariantId>,
    #[schema(min_length = 1, max_length = 64, pattern = r"\S")]
    pub sku: String,
    #[schema(minimum = 0)]
    pub price_cents: i64,
    /// Default "Default"; 1 to 255 characters.
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub title: Option<String>,
    #[schema(minimum = 0)]
    pub compare_at_price_cents: Option<i64>,
    #[schema(minimum = 0)]
    pub weight_grams: Option<i64>,
    /// Initial stock of a new variant (default 0); change stock later with adjustments.
    #[schema(minimum = 0)]
    pub on_hand: Option<i64>,
    /// `inventory.low_stock` fires when available units fall to this (default 5).
    #[schema(minimum = 0)]
    pub low_stock_threshold: Option<i64>,
}

/// [`VariantIn`]'s schema, edited by `edit`.
fn variant_schema(edit: impl FnOnce(&mut Object)) -> RefOr<Schema> {
    let RefOr::T(Schema::Object(mut o)) = <VariantIn as PartialSchema>::schema() else {
        unreachable!("a struct's schema is an object")
    };
    edit(&mut o);
    o.into()
}

/// The schema of a variant a create (or a PATCH) adds: [`VariantIn`] without `id`.
pub struct NewVariantIn;

impl PartialSchema for NewVariantIn {
    fn schema() -> RefOr<Schema> {
        variant_schema(|o| {
            o.properties.remove("id");
            o.description =
                Some("A variant to add; `on_hand` is its initial stock (default 0).".to_owned());
        })
    }
}

impl ToSchema for NewVariantIn {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("NewVariantIn")
    }
}

/// The schema of a variant a PATCH keeps and changes: [`VariantIn`] with `id` required and
/// no `on_hand` (`check_variants` refuses it: stock changes through inventory adjustments).
pub struct VariantChangeIn;

impl PartialSchema for VariantChangeIn {
    fn schema() -> RefOr<Schema> {
        variant_schema(|o| {
            o.properties.remove("on_hand");
            o.properties.insert(
                "id".to_owned(),
                Ref::from_schema_name(VariantId::name()).into(),
            );
            o.required.insert(0, "id".to_owned());
            o.description = Some(
                "A variant of the product to keep, by `id`, with its new values; its stock \
                 changes through inventory adjustments, not `on_hand`."
                    .to_owned(),
            );
        })
    }
}

impl ToSchema for VariantChangeIn {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("VariantChangeIn")
    }

    fn schemas(out: &mut Vec<(String, RefOr<Schema>)>) {
        <VariantIn as ToSchema>::schemas(out);
    }
}

/// The schema of a PATCH's variant: one to keep ([`VariantChangeIn`], with `id`) or one to
/// add ([`NewVariantIn`], without).
pub struct VariantPatchIn;

impl PartialSchema for VariantPatchIn {
    fn schema() -> RefOr<Schema> {
        utoipa::openapi::schema::OneOfBuilder::new()
            .item(Ref::from_schema_name(VariantChangeIn::name()))
            .item(Ref::from_schema_name(NewVariantIn::name()))
            .into()
    }
}

impl ToSchema for VariantPatchIn {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("VariantPatchIn")
    }

    fn schemas(out: &mut Vec<(String, RefOr<Schema>)>) {
        out.push((NewVariantIn::name().into(), NewVariantIn::schema()));
        out.push((VariantChangeIn::name().into(), VariantChangeIn::schema()));
        VariantChangeIn::schemas(out);
    }
}

/// A product's tags, as `writes::check_tags` takes them: up to 50, each 1 to 64 characters
/// once trimmed.
fn tags_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .description(Some(
            "Up to 50 tags of 1 to 64 characters (trimmed). A change replaces the tags.",
        ))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(64))
                .pattern(Some(r"\S")),
        )
        .max_items(Some(50))
        .examples([serde_json::json!(["summer"])])
        .build()
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProductIn {
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub title: String,
    /// Default: made from the title (unique in the store).
    #[schema(max_length = 120, pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$")]
    pub slug: Option<String>,
    #[schema(max_length = 65535)]
    pub description: Option<String>,
    /// Default `active`.
    pub status: Option<ProductStatus>,
    pub category_ids: Option<Vec<CategoryId>>,
    #[schema(schema_with = tags_schema)]
    pub tags: Option<Vec<String>>,
    /// 1 to 100, each SKU once (so no two alike).
    #[schema(value_type = std::collections::BTreeSet<NewVariantIn>, min_items = 1, max_items = 100)]
    pub variants: Vec<VariantIn>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProductPatch {
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub title: Option<String>,
    #[schema(max_length = 120, pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$")]
    pub slug: Option<String>,
    #[schema(max_length = 65535)]
    pub description: Option<String>,
    pub status: Option<ProductStatus>,
    pub category_ids: Option<Vec<CategoryId>>,
    #[schema(schema_with = tags_schema)]
    pub tags: Option<Vec<String>>,
    /// The product's variants afterwards (1 to 100): those listed with `id` are kept and
    /// changed, those without are added, the rest removed (refused, 409, while they hold
    /// stock).
    #[schema(
        value_type = Option<std::collections::BTreeSet<VariantPatchIn>>,
        min_items = 1,
        max_items = 100
    )]
    pub variants: Option<Vec<VariantIn>>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VariantOut {
    pub id: VariantId,
    pub sku: String,
    pub title: String,
    pub price_cents: i64,
    pub compare_at_price_cents: Option<i64>,
    pub weight_grams: Option<i64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProductOut {
    pub id: ProductId,
    pub store_id: StoreId,
    pub title: String,
    pub slug: String,
    pub description: String,
    pub status: ProductStatus,
    pub category_ids: Vec<CategoryId>,
    pub tags: Vec<String>,
    pub variants: Vec<VariantOut>,
    /// Mean of the approved reviews' ratings, two decimals; null without any.
    pub rating_average: Option<f64>,
    pub rating_count: i64,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ProductFilter {
    // Inline, as the inbox's sort: the parameter's enum is the product status's.
    #[param(value_type = Option<ProductStatus>, inline)]
    pub status: Option<String>,
    pub category_id: Option<CategoryId>,
    /// Part of a title or SKU, case-insensitive.
    pub search: Option<String>,
    /// `created_at`, `updated_at` or `title`; `-` first for descending. Default `-created_at`.
    #[param(schema_with = product_sorts)]
    pub sort: Option<String>,
}

/// The schema of the product list's `sort`: each of [`SORT_COLUMNS`](super::store::SORT_COLUMNS),
/// ascending or (with `-`) descending.
fn product_sorts() -> Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let sorts = super::store::SORT_COLUMNS
        .iter()
        .flat_map(|c| [(*c).to_owned(), format!("-{c}")]);
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(sorts))
        .description(Some("`-` first for descending. Default `-created_at`."))
        .build()
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CategoryIn {
    #[schema(min_length = 1, max_length = 120, pattern = r"\S")]
    pub name: String,
    #[schema(max_length = 120, pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$")]
    pub slug: Option<String>,
    pub parent_id: Option<CategoryId>,
}

/// `parent_id: null` moves the category to the top of the tree.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CategoryPatch {
    #[schema(min_length = 1, max_length = 120, pattern = r"\S")]
    pub name: Option<String>,
    #[schema(max_length = 120, pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$")]
    pub slug: Option<String>,
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schema(value_type = Option<CategoryId>)]
    pub parent_id: Option<Option<CategoryId>>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CategoryOut {
    pub id: CategoryId,
    pub store_id: StoreId,
    pub parent_id: Option<CategoryId>,
    pub name: String,
    pub slug: String,
    pub created_at: String,
    pub updated_at: String,
}
