//! Demo data for `setup --demo`: a store a developer can click through. A small team with
//! each store role (sharing the owner's password), a catalog of about 50 products with
//! variants and stock, 200 customers, 500 orders across every status with their payments
//! and a few refunds, and 300 reviews across statuses. The data is the same on every run
//! (a seeded generator) and goes through the areas' own store functions, so it obeys their
//! rules. The inbox has a chat, a messaging-app and an e-mail channel (their secrets left
//! for the developer to set) and 40 conversations in every status, with messages, notes and
//! a few attachments. It records no order events or audit entries; stock reservations record their
//! threshold events as any reservation does (a new store has no webhooks to deliver them).
//! Two workflows with two published versions each: a review request over the messaging app
//! 7 days after delivery, and a weekly low-stock summary sent to the store's webhooks.
//! Purchasing has 3 suppliers and 6 purchase orders, one or more in every status; the
//! received ones brought their stock in as any receipt does.
//! Marketing has 2 segments and 3 campaigns: a draft, one scheduled a week out and one sent
//! (recipients and stats written as the batch jobs write them, no mail sent).
//! The brand system has three versions: the default and two saves.
//! Its onboarding checklist is half done (products, messaging app, team, first order),
//! leaving the settings (payments, freight, custom domain) and saving a brand system for the
//! developer to try.

use crate::db::Tx;
use chrono::{DateTime, Duration, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::SetupOutput;
use crate::auth::model::Locale;
use crate::auth::store::insert_user;
use crate::catalog::model::{CategoryOut, ProductStatus, VariantIn};
use crate::catalog::store as catalog;
use crate::customers::store as customers;
use crate::error::AppError;
use crate::ids::{CategoryId, CustomerId, OrderId, ProductId, RefundId, ReviewId, StoreId};
use crate::inventory::store::{self as stock, Change};
use crate::orders::model::{OrderItem, OrderOut, OrderStatus, RefundOut};
use crate::orders::store as orders;
use crate::reviews::model::{ReviewOut, ReviewStatus};
use crate::reviews::store as reviews;
use crate::tenants::store::add_store_member;
use crate::time;

const TEAM: [(&str, &str); 3] = [
    ("marina.admin@demo.merchant-admin.test", "admin"),
    ("joao.staff@demo.merchant-admin.test", "staff"),
    ("lia.viewer@demo.merchant-admin.test", "viewer"),
];

const CATEGORIES: [&str; 6] = [
    "Camisetas",
    "Calças",
    "Acessórios",
    "Casa",
    "Papelaria",
    "Presentes",
];
const NOUNS: [&str; 10] = [
    "Camiseta", "Moletom", "Boné", "Caneca", "Caderno", "Bolsa", "Meia", "Calça", "Pôster", "Vela",
];
const ADJECTIVES: [&str; 5] = ["Básica", "Estampada", "Clássica", "Listrada", "Artesanal"];
const SIZES: [&str; 3] = ["P", "M", "G"];
const FIRST: [&str; 20] = [
    "Ana", "Bruno", "Carla", "Diego", "Elisa", "Fábio", "Gabriela", "Heitor", "Isabela", "João",
    "Karina", "Lucas", "Mariana", "Nicolas", "Olívia", "Pedro", "Quésia", "Rafael", "Sofia",
    "Tiago",
];
const LAST: [&str; 10] = [
    "Silva", "Souza", "Oliveira", "Santos", "Lima", "Costa", "Pereira", "Almeida", "Rocha", "Dias",
];
const REVIEWS: [(i64, &str, &str); 6] = [
    (5, "Adorei", "Chegou rápido e a qualidade é ótima."),
    (5, "Perfeito", "Exatamente como na foto."),
    (4, "Muito bom", "Gostei, mas o tamanho veio um pouco justo."),
    (4, "Recomendo", "Bom custo-benefício."),
    (3, "Ok", "Cumpre o que promete, nada além."),
    (2, "Esperava mais", "O tecido é mais fino do que parecia."),
];

/// What the seeded catalog offers: (product, variant, price) of every variant.
struct Offer {
    product: ProductId,
    variant: crate::ids::VariantId,
}

pub fn seed(
    tx: &Tx<'_>,
    now: DateTime<Utc>,
    out: SetupOutput,
    password_hash: &str,
) -> Result<(), AppError> {
    let now_s = time::format(now);
    for (email, role) in TEAM {
        let user = insert_user(tx, now, email, password_hash, Locale::PtBr)?.id;
        add_store_member(tx, out.store_id, user, role, &now_s)?;
    }
    let mut rng = StdRng::seed_from_u64(6);
    let store = out.store_id;
    let start = now - Duration::days(90);
    let offers = seed_catalog(tx, &mut rng, store, start)?;
    let people = seed_customers(tx, &mut rng, store, start)?;
    let spacing = Duration::minutes(250);
    let sold = seed_orders(tx, &mut rng, store, &offers, &people, now, 500, spacing)?;
    seed_reviews(tx, &mut rng, store, &offers, &sold, now, 300, spacing)?;
    seed_inbox(tx, &mut rng, out, now)?;
    crate::billing::lifecycle::seed_demo(tx, out.tenant_id, now)?;
    seed_workflows(tx, out, now)?;
    seed_purchasing(tx, store, &offers, now)?;
    crate::marketing::writes::seed_demo(tx, store, now)?;
    seed_pages(tx, store, now)?;
    // A feed token for the ad network's product feed; nobody is shown it (the merchant
    // rotates it to get one), so the demo holds no usable credential.
    let feed_token = crate::secrets::new_token("svc_feed_");
    crate::ads::store::set_feed_token(tx, store, &crate::secrets::hash(&feed_token), now)?;
    crate::brand::writes::seed_demo(tx, store, out.user_id, now)?;
    seed_assistant(tx, out, &offers, now)?;
    crate::notifications::produce::seed_demo(tx, store, out.user_id, now)?;
    // The catalog was written row by row above (not through the catalog's writes): its
    // storefront rows are rendered once, at the end.
    crate::storefront::store::refresh_store(tx, store)
}

/// Adds `orders` orders and `reviews` reviews to a store that has products and customers,
/// `spacing` apart and ending at `now` (the benchmarks' 100,000-row stores).
pub fn bulk(
    tx: &Tx<'_>,
    store: StoreId,
    orders: i64,
    reviews: i64,
    seed: u64,
    now: DateTime<Utc>,
    spacing: Duration,
) -> Result<(), AppError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let offers: Vec<Offer> = stock::list(tx, store, None, None, None, 1000, 0)?
        .into_iter()
        .map(|l| Offer {
            product: l.product_id,
            variant: l.variant_id,
        })
        .collect();
    let people: Vec<CustomerId> = customers::list(tx, store, None, None, 1000, 0)?
        .into_iter()
        .map(|c| c.id)
        .collect();
    if offers.is_empty() || people.is_empty() {
        return Err(AppError::field(
            "store",
            "needs products and customers first",
        ));
    }
    let sold = seed_orders(tx, &mut rng, store, &offers, &people, now, orders, spacing)?;
    seed_reviews(tx, &mut rng, store, &offers, &sold, now, reviews, spacing)
}

fn seed_catalog(
    tx: &Tx<'_>,
    rng: &mut StdRng,
    store: StoreId,
    at: DateTime<Utc>,
) -> Result<Vec<Offer>, AppError> {
    let mut categories: Vec<CategoryId> = Vec::new();
    for name in CATEGORIES {
        let c = CategoryOut {
            id: CategoryId::new(),
            store_id: store,
            parent_id: None,
            name: name.into(),
            slug: crate::text::slugify(name),
            created_at: time::format(at),
            updated_at: time::format(at),
        };
        catalog::insert_category(tx, &c)?;
        categories.push(c.id);
    }
    let mut offers = Vec::new();
    for (n, (noun, adj)) in NOUNS
        .iter()
        .flat_map(|n| ADJECTIVES.iter().map(move |a| (n, a)))
        .enumerate()
    {
        let title = format!("{noun} {adj}");
        let slug = catalog::free_slug(tx, "products", store, &crate::text::slugify(&title))?;
        let id = ProductId::new();
        let status = match n % 17 {
            0 => ProductStatus::Draft,
            1 => ProductStatus::Archived,
            _ => ProductStatus::Active,
        };
        let when = at + Duration::minutes(i64::try_from(n).unwrap_or(0) * 7);
        catalog::insert_product(tx, store, id, &title, &slug, "", status, &[], when)?;
        catalog::set_categories(tx, id, &[categories[n % categories.len()]])?;
        let price = rng.random_range(20..250) * 100 - 10;
        let sizes: &[&str] = if n % 3 == 0 { &["Único"] } else { &SIZES };
        let variants: Vec<VariantIn> = sizes
            .iter()
            .map(|s| VariantIn {
                id: None,
                sku: format!("{}-{s}", slug.to_uppercase()),
                price_cents: price,
                title: Some((*s).to_owned()),
                compare_at_price_cents: (n % 4 == 0).then_some(price + 2000),
                weight_grams: Some(rng.random_range(100..900)),
                on_hand: Some(rng.random_range(0..60)),
                low_stock_threshold: None,
            })
            .collect();
        if let Err(v) = catalog::set_variants(tx, store, id, &variants, when)? {
            return Err(AppError::internal(anyhow::anyhow!("demo variant {v}")));
        }
        for level in stock::list(tx, store, Some(id), None, None, 10, 0)? {
            offers.push(Offer {
                product: id,
                variant: level.variant_id,
            });
        }
    }
    Ok(offers)
}

fn seed_customers(
    tx: &Tx<'_>,
    rng: &mut StdRng,
    store: StoreId,
    at: DateTime<Utc>,
) -> Result<Vec<CustomerId>, AppError> {
    let mut ids = Vec::new();
    for n in 0..200 {
        let (first, last) = (FIRST[n % FIRST.len()], LAST[(n / 2) % LAST.len()]);
        let id = CustomerId::new();
        // A few buyers came over the messaging app and left no e-mail.
        let email = (n % 9 != 0).then(|| {
            let local = crate::text::slugify(&format!("{first} {last} {n}"));
            format!("{}@example.com", local.replace('-', "."))
        });
        let fields = customers::Fields {
            name: Some(format!("{first} {last}")),
            email: Some(email),
            phone: Some(Some(format!(
                "+55 11 9{:04}-{:04}",
                rng.random_range(1000..9999),
                n
            ))),
            addresses: Some(Vec::new()),
            accepts_marketing: Some(n % 3 == 0),
            tags: (n % 7 == 0).then(|| vec!["vip".to_owned()]),
        };
        let when = at + Duration::minutes(i64::try_from(n).unwrap_or(0) * 31);
        customers::insert(tx, store, id, &fields, when)?;
        ids.push(id);
    }
    Ok(ids)
}

/// The status mix of the seeded orders, out of 100.
fn pick_status(roll: u32) -> OrderStatus {
    match roll {
        0..10 => OrderStatus::Pending,
        10..25 => OrderStatus::Paid,
        25..35 => OrderStatus::Fulfilled,
        35..50 => OrderStatus::Shipped,
        50..85 => OrderStatus::Delivered,
        85..93 => OrderStatus::Cancelled,
        93..97 => OrderStatus::PartiallyRefunded,
        _ => OrderStatus::Refunded,
    }
}

/// Seeds `count` orders, `spacing` apart and ending at `now`; returns (order, product,
/// customer) of every paid line, for reviews.
#[allow(clippy::too_many_arguments)]
fn seed_orders(
    tx: &Tx<'_>,
    rng: &mut StdRng,
    store: StoreId,
    offers: &[Offer],
    people: &[CustomerId],
    now: DateTime<Utc>,
    count: i64,
    spacing: Duration,
) -> Result<Vec<(OrderId, ProductId, CustomerId)>, AppError> {
    let currency = orders::currency(tx, store)?;
    let mut sold = Vec::new();
    for n in 0..count {
        let mut status = pick_status(rng.random_range(0..100));
        let customer = people[rng.random_range(0..people.len())];
        let created = now - spacing * i32::try_from(count - n).unwrap_or(i32::MAX);
        let mut items: Vec<OrderItem> = Vec::new();
        for _ in 0..rng.random_range(1..4) {
            let offer = &offers[rng.random_range(0..offers.len())];
            if items.iter().any(|i| i.variant_id == offer.variant) {
                continue;
            }
            let Some(v) = orders::sellable(tx, store, offer.variant)? else {
                continue;
            };
            let quantity = rng.random_range(1..3);
            items.push(OrderItem {
                variant_id: offer.variant,
                product_id: offer.product,
                title: v.product_title,
                variant_title: v.variant_title,
                sku: v.sku,
                quantity,
                unit_price_cents: v.price_cents,
                total_cents: v.price_cents * quantity,
            });
        }
        // Open orders hold their stock; an order the shelf cannot cover was delivered long
        // ago instead (its units left before today's count).
        if matches!(status, OrderStatus::Pending | OrderStatus::Paid) {
            for (i, item) in items.iter().enumerate() {
                if let Change::Short(_) | Change::Missing =
                    stock::change(tx, store, item.variant_id, 0, item.quantity, created)?
                {
                    for undo in &items[..i] {
                        stock::change(tx, store, undo.variant_id, 0, -undo.quantity, created)?;
                    }
                    status = OrderStatus::Delivered;
                    break;
                }
            }
        }
        let subtotal: i64 = items.iter().map(|i| i.total_cents).sum();
        let shipping = if subtotal > 20_000 { 0 } else { 1_500 };
        let discount = if n % 10 == 0 { subtotal / 10 } else { 0 };
        let total = subtotal + shipping - discount;
        let at = time::format(created);
        let mut o = OrderOut {
            id: OrderId::new(),
            store_id: store,
            number: orders::next_number(tx, store)?,
            customer_id: Some(customer),
            source: if n % 8 == 0 { "manual" } else { "api" }.into(),
            items,
            subtotal_cents: subtotal,
            shipping_cents: shipping,
            discount_cents: discount,
            total_cents: total,
            refunded_cents: 0,
            currency: currency.clone(),
            status,
            allowed_status_transitions: status.allowed_next().to_vec(),
            payments: Vec::new(),
            note: String::new(),
            created_at: at.clone(),
            updated_at: at,
        };
        orders::insert(tx, &o)?;
        let paid = !matches!(status, OrderStatus::Pending | OrderStatus::Cancelled);
        orders::bump_customer(tx, store, Some(customer), 1, if paid { total } else { 0 })?;
        if paid {
            let payment = orders::insert_payment(
                tx,
                store,
                o.id,
                "manual",
                total,
                created + Duration::hours(1),
            )?;
            let refund = match status {
                OrderStatus::Refunded => total,
                OrderStatus::PartiallyRefunded => (total / 4).max(1),
                _ => 0,
            };
            if refund > 0 {
                let r = RefundOut {
                    id: RefundId::new(),
                    order_id: o.id,
                    payment_id: payment,
                    amount_cents: refund,
                    reason: Some("Produto com defeito".into()),
                    status: "pending".into(),
                    created_at: time::format(created + Duration::days(3)),
                };
                let key = r.id.to_string();
                orders::insert_refund(tx, store, &r, &key, &key, None, None)?;
                orders::confirm_refund(tx, &r)?;
                orders::bump_customer(tx, store, Some(customer), 0, -refund)?;
                o.refunded_cents = refund;
            }
            o.payments = orders::payments(tx, o.id)?;
            orders::save(tx, &o)?;
            // What the API counts as a verified purchase: paid and not fully refunded.
            if status != OrderStatus::Refunded {
                for item in &o.items {
                    sold.push((o.id, item.product_id, customer));
                }
            }
        }
    }
    Ok(sold)
}

#[allow(clippy::too_many_arguments)]
fn seed_reviews(
    tx: &Tx<'_>,
    rng: &mut StdRng,
    store: StoreId,
    offers: &[Offer],
    sold: &[(OrderId, ProductId, CustomerId)],
    now: DateTime<Utc>,
    count: i64,
    spacing: Duration,
) -> Result<(), AppError> {
    for n in 0..count {
        // Two in three come from a paid order (verified purchases); the rest were imported.
        let (product, order, customer) = if n % 3 != 0 && !sold.is_empty() {
            let (o, p, c) = sold[rng.random_range(0..sold.len())];
            (p, Some(o), Some(c))
        } else {
            (
                offers[rng.random_range(0..offers.len())].product,
                None,
                None,
            )
        };
        let Some((slug, title)) = reviews::product(tx, store, product)? else {
            continue;
        };
        let (rating, head, body) = REVIEWS[rng.random_range(0..REVIEWS.len())];
        let status = match rng.random_range(0..100) {
            0..60 => ReviewStatus::Approved,
            60..85 => ReviewStatus::Pending,
            _ => ReviewStatus::Rejected,
        };
        let first = FIRST[rng.random_range(0..FIRST.len())];
        let at = time::format(now - spacing * i32::try_from(count - n).unwrap_or(i32::MAX));
        let r = ReviewOut {
            id: ReviewId::new(),
            store_id: store,
            product_id: product,
            customer_id: customer,
            order_id: order,
            author_name: first.into(),
            author_email: format!("{}.{n}@example.com", crate::text::slugify(first)),
            title: head.into(),
            body: body.into(),
            rating,
            status,
            is_verified_purchase: order.is_some(),
            created_at: at.clone(),
            updated_at: at,
            product_slug: slug,
            product_title: title,
            reply: None,
            replied_at: None,
        };
        reviews::insert(tx, &r)?;
    }
    Ok(())
}

const ASKS: [&str; 8] = [
    "Oi! Vocês entregam em Belo Horizonte?",
    "Qual o prazo de entrega para o meu CEP?",
    "A camiseta estampada tem no tamanho G?",
    "Meu pedido ainda não chegou, podem verificar?",
    "Posso trocar o moletom por um tamanho maior?",
    "Vocês aceitam Pix?",
    "O caderno vem com folhas pautadas?",
    "Quero cancelar o pedido que fiz ontem.",
];
const ANSWERS: [&str; 6] = [
    "Olá! Entregamos sim, em 3 a 5 dias úteis.",
    "Vou verificar e já te respondo.",
    "Temos sim! Posso reservar para você?",
    "Seu pedido saiu para entrega hoje.",
    "Claro, a troca é gratuita em até 30 dias.",
    "Pronto, está resolvido. Posso ajudar em algo mais?",
];
const LABELS: [&str; 4] = ["entrega", "troca", "pagamento", "vip"];
/// A 1×1 PNG, for the demo's photo attachments.
const PIXEL_PNG: [u8; 67] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

/// The three channels and 40 conversations spread over the last two weeks: each status,
/// priority and channel, some assigned to the owner, some with notes, labels and files.
fn seed_inbox(
    tx: &Tx<'_>,
    rng: &mut StdRng,
    out: SetupOutput,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    use crate::ids::{ChannelId, ConversationId, MessageId, NoteId};
    use crate::inbox::model::{
        ChannelKind, Contact, ConversationStatus, DeliveryStatus, NewFile, NoteOut, Priority,
        Sender,
    };
    use crate::inbox::store::{self as inbox, ConversationChange, NewChannel, NewConversation};

    let store = out.store_id;
    let no_origins: Vec<String> = Vec::new();
    let key = crate::secrets::new_token("chk_");
    let channels = [
        (
            ChannelKind::StorefrontChat,
            "Chat do site",
            serde_json::Map::new(),
        ),
        (
            ChannelKind::Msgapp,
            "Mensagens",
            serde_json::json!({"phone_number_id": "100200300400"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ),
        (
            ChannelKind::Email,
            "E-mail de suporte",
            serde_json::json!({"address": "suporte@demo.merchant-admin.test"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ),
    ];
    let mut ids = Vec::new();
    for (kind, name, settings) in &channels {
        let id = ChannelId::new();
        inbox::insert_channel(
            tx,
            &NewChannel {
                id,
                store,
                kind: *kind,
                name,
                key: (*kind == ChannelKind::StorefrontChat).then_some(key.as_str()),
                allowed_origins: &no_origins,
                settings,
                secrets: None,
            },
            now - Duration::days(30),
        )?;
        ids.push((id, *kind));
    }
    let people = customers::list(tx, store, None, None, 40, 0)?;
    let statuses = [
        ConversationStatus::Open,
        ConversationStatus::Pending,
        ConversationStatus::Resolved,
        ConversationStatus::Snoozed,
    ];
    let priorities = [
        Priority::None,
        Priority::Low,
        Priority::Medium,
        Priority::High,
        Priority::Urgent,
    ];
    for i in 0..40_usize {
        let (channel, kind) = ids[i % 3];
        let person = &people[i % people.len()];
        let contact = match kind {
            ChannelKind::StorefrontChat if i % 2 == 0 => Contact::default(),
            ChannelKind::StorefrontChat | ChannelKind::Email => Contact {
                name: Some(person.name.clone()),
                email: person.email.clone(),
                phone: None,
            },
            ChannelKind::Msgapp => Contact {
                name: Some(person.name.clone()),
                email: None,
                phone: person.phone.clone(),
            },
        };
        let id = ConversationId::new();
        let hours = i64::try_from(i).unwrap_or(0) * 8 + rng.random_range(0..6);
        let mut at = now - Duration::hours(hours) - Duration::minutes(30);
        inbox::insert_conversation(
            tx,
            &NewConversation {
                id,
                store,
                channel,
                kind,
                contact: &contact,
                visitor_token_hash: None,
            },
            at,
        )?;
        let turns = 1 + rng.random_range(0..5_usize);
        for t in 0..turns {
            let sender = if t % 2 == 0 {
                Sender::Visitor
            } else {
                Sender::Agent
            };
            let text = if t % 2 == 0 {
                ASKS[(i + t) % ASKS.len()]
            } else {
                ANSWERS[(i + t) % ANSWERS.len()]
            };
            let mid = MessageId::new();
            inbox::insert_message(
                tx,
                &inbox::NewMessage {
                    id: mid,
                    conversation: id,
                    store,
                    sender,
                    agent: (sender == Sender::Agent).then_some(out.user_id),
                    text,
                    external_id: None,
                    delivery_status: if sender == Sender::Agent && t + 1 < turns {
                        DeliveryStatus::Read
                    } else {
                        DeliveryStatus::Sent
                    },
                },
                at,
            )?;
            if i % 13 == 1 && t == 0 {
                let file = NewFile {
                    name: Some("foto-do-produto.png".to_owned()),
                    mime_type: "image/png".to_owned(),
                    data: PIXEL_PNG.to_vec(),
                };
                inbox::insert_attachments(tx, mid, &[file])?;
            }
            if kind == ChannelKind::Msgapp && sender == Sender::Visitor {
                inbox::extend_reply_window(tx, id, at + Duration::hours(24))?;
            }
            at += Duration::minutes(rng.random_range(2..40));
        }
        let status = statuses[i % statuses.len()];
        let snoozed_until = (status == ConversationStatus::Snoozed)
            .then(|| time::format(now + Duration::hours(4 + i64::try_from(i).unwrap_or(0))));
        let labels: Vec<String> = (i % 3 == 0)
            .then(|| LABELS[i % LABELS.len()].to_owned())
            .into_iter()
            .collect();
        inbox::update_conversation(
            tx,
            store,
            id,
            &ConversationChange {
                status: Some(status),
                priority: Some(priorities[i % priorities.len()]),
                assignee: (i % 4 == 1).then_some(Some(out.user_id)),
                labels: Some(labels),
                snoozed_until: snoozed_until.clone(),
            },
            at,
        )?;
        if let Some(until) = &snoozed_until {
            crate::inbox::snooze::schedule(tx, store, id, until, now)?;
        }
        if i % 5 == 2 {
            let note = NoteOut {
                id: NoteId::new(),
                conversation_id: id,
                author_user_id: Some(out.user_id),
                text: "Cliente recorrente: oferecer frete grátis.".to_owned(),
                created_at: time::format(at),
            };
            inbox::insert_note(tx, store, &note)?;
        }
    }
    Ok(())
}

/// Two assistant conversations of the owner: one whose price change was approved and
/// applied (an undoable action), one with a stock adjustment awaiting a decision.
fn seed_assistant(
    tx: &Tx<'_>,
    out: SetupOutput,
    offers: &[Offer],
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    use crate::assistant::model::{ProposalStatus, Risk, Role};
    use crate::assistant::provider::ToolCall;
    use crate::assistant::store::{self as assistant, NewAction, NewMessage, NewProposal};
    use crate::ids::{AssistantConversationId, ProposalId};
    use serde_json::json;

    let (store, user) = (out.store_id, out.user_id);
    let Some(first) = offers.first() else {
        return Ok(());
    };
    let Some(product) = catalog::get_product(tx, store, first.product)? else {
        return Ok(());
    };
    let Some(v) = product.variants.iter().find(|v| v.id == first.variant) else {
        return Ok(());
    };
    let (old, new) = (v.price_cents, v.price_cents + 1000);
    let ask = |conv, text: &str, call: &ToolCall, at| -> Result<(), AppError> {
        assistant::append(tx, conv, &NewMessage::text(Role::User, text), at)?;
        let calls = [call.clone()];
        assistant::append(
            tx,
            conv,
            &NewMessage {
                tool_calls: Some(&calls),
                ..NewMessage::text(Role::Assistant, "")
            },
            at,
        )?;
        Ok(())
    };

    // 1. A price change, approved and applied an hour ago.
    let at = now - Duration::hours(1);
    let conv = AssistantConversationId::new();
    assistant::insert_conversation(tx, store, user, conv, "Preço da camiseta", at)?;
    let args = json!({"variant_id": v.id, "price_cents": new});
    let call = ToolCall {
        id: "call_demo_1".into(),
        name: "change_price".into(),
        arguments: args.to_string(),
    };
    ask(
        conv,
        &format!("Aumente o preço de {} em R$ 10,00", product.title),
        &call,
        at,
    )?;
    let pid = ProposalId::new();
    let summary = format!(
        "Change the price of {} ({}, SKU {}) from BRL {}.{:02} to BRL {}.{:02}",
        product.title,
        v.title,
        v.sku,
        old / 100,
        old % 100,
        new / 100,
        new % 100
    );
    assistant::propose(
        tx,
        &NewProposal {
            id: pid,
            store,
            user,
            conversation: conv,
            tool_call_id: &call.id,
            tool: &call.name,
            arguments: &args,
            summary: &summary,
            risk: Risk::Money,
            expires_at: at + crate::assistant::turn::PROPOSAL_TTL,
        },
        at,
    )?;
    let variants: Vec<VariantIn> = product
        .variants
        .iter()
        .map(|x| VariantIn {
            id: Some(x.id),
            sku: x.sku.clone(),
            price_cents: if x.id == v.id { new } else { x.price_cents },
            title: Some(x.title.clone()),
            compare_at_price_cents: x.compare_at_price_cents,
            weight_grams: x.weight_grams,
            on_hand: None,
            low_stock_threshold: None,
        })
        .collect();
    if let Err(bad) = catalog::set_variants(tx, store, product.id, &variants, at)? {
        return Err(AppError::internal(anyhow::anyhow!("demo variant {bad}")));
    }
    crate::db::exec(
        tx,
        "UPDATE assistant_proposals SET status = 'applying' WHERE id = ?1",
        [pid],
    )?;
    assistant::settle(tx, pid, ProposalStatus::Applied, at)?;
    let proposal = assistant::proposal_by_id_unscoped(tx, pid, now)?;
    assistant::insert_action(
        tx,
        &NewAction {
            store,
            user,
            proposal: &proposal,
            resource_type: "product",
            resource_id: &product.id.to_string(),
            undo: Some(&json!({"variant_id": v.id, "price_cents": old})),
        },
        at,
    )?;
    let note = format!("The user approved proposal {pid} ({summary}). It was applied.");
    assistant::append(tx, conv, &NewMessage::text(Role::Decision, &note), at)?;
    assistant::append(
        tx,
        conv,
        &NewMessage::text(Role::Assistant, "Pronto: o novo preço já está valendo."),
        at,
    )?;

    // 2. A stock adjustment waiting for a decision.
    let at = now - Duration::minutes(5);
    let conv = AssistantConversationId::new();
    assistant::insert_conversation(tx, store, user, conv, "Reposição de estoque", at)?;
    let args = json!({"variant_id": v.id, "delta": 20, "reason": "Reposição do fornecedor"});
    let call = ToolCall {
        id: "call_demo_2".into(),
        name: "adjust_stock".into(),
        arguments: args.to_string(),
    };
    ask(
        conv,
        "Chegaram 20 unidades da camiseta, pode lançar?",
        &call,
        at,
    )?;
    let pid = ProposalId::new();
    assistant::propose(
        tx,
        &NewProposal {
            id: pid,
            store,
            user,
            conversation: conv,
            tool_call_id: &call.id,
            tool: &call.name,
            arguments: &args,
            summary: &format!("Add 20 unit(s) to SKU {}: Reposição do fornecedor", v.sku),
            risk: Risk::None,
            expires_at: at + crate::assistant::turn::PROPOSAL_TTL,
        },
        at,
    )?;
    Ok(())
}

/// Two workflows, each published twice (a first version, then an edit), through the
/// workflows area's own checks and publish.
fn seed_workflows(tx: &Tx<'_>, out: SetupOutput, now: DateTime<Utc>) -> Result<(), AppError> {
    use crate::ids::WorkflowId;
    use crate::workflows::model::Graph;
    use crate::workflows::store::{self as workflows, Draft, NewWorkflow};
    use crate::workflows::{self as wf, validate};
    use serde_json::json;

    let graph = |v: serde_json::Value| -> Result<Graph, AppError> {
        serde_json::from_value(v).map_err(AppError::internal)
    };
    let review = |days: i64, template: &str| {
        graph(json!({
            "nodes": [
                {"id": "wait", "type": "wait", "config": {"seconds": days * 86_400},
                 "position": {"x": 0, "y": 0}},
                {"id": "ask", "type": "send_message",
                 "config": {"template": template, "language": "pt_BR",
                            "parameters": ["{{customer.name}}", "{{order.number}}"]},
                 "position": {"x": 0, "y": 120}},
                {"id": "end", "type": "end", "config": {}, "position": {"x": 0, "y": 240}}
            ],
            "edges": [{"from": "wait", "to": "ask"}, {"from": "ask", "to": "end"}]
        }))
    };
    let summary = |with_condition: bool| {
        if with_condition {
            graph(json!({
                "nodes": [
                    {"id": "any", "type": "condition",
                     "config": {"field": "inventory.low_stock_count", "op": "gt", "value": 0},
                     "position": {"x": 0, "y": 0}},
                    {"id": "notify", "type": "webhook", "config": {}, "position": {"x": -80, "y": 120}},
                    {"id": "end", "type": "end", "config": {}, "position": {"x": 80, "y": 120}}
                ],
                "edges": [{"from": "any", "to": "notify", "branch": "true"},
                          {"from": "any", "to": "end", "branch": "false"}]
            }))
        } else {
            graph(json!({
                "nodes": [{"id": "notify", "type": "webhook", "config": {}, "position": {"x": 0, "y": 0}}],
                "edges": []
            }))
        }
    };
    let ctx = wf::context(tx, out.store_id, false)?;
    let flows = [
        (
            "Pedir avaliação após a entrega",
            "Sete dias depois da entrega, pede uma avaliação pelo aplicativo de mensagens.",
            json!({"type": "event", "event": "orders.delivered"}),
            [
                review(5, "pedido_avaliacao")?,
                review(7, "pedido_avaliacao_v2")?,
            ],
        ),
        (
            "Resumo semanal de estoque baixo",
            "Toda segunda às 9h, envia aos webhooks da loja o resumo do estoque baixo.",
            json!({"type": "schedule", "cron": "0 9 * * 1"}),
            [summary(false)?, summary(true)?],
        ),
    ];
    for (i, (name, description, trigger, versions)) in flows.into_iter().enumerate() {
        let id = WorkflowId::new();
        let created = now - Duration::days(30) + Duration::minutes(i64::try_from(i).unwrap_or(0));
        let [first, second] = versions;
        let t = validate::check(&first, &trigger, &ctx)?;
        let w = NewWorkflow {
            id,
            created_by: out.user_id,
            name,
            description,
            graph: &first,
            trigger: &t,
        };
        workflows::insert(tx, out.store_id, &w, created)?;
        wf::publish(tx, out.store_id, id, out.user_id, false, created)?;
        let edit = Draft {
            graph: Some(second),
            ..Draft::default()
        };
        // The second version goes live now, so a schedule's next fire time is ahead.
        let later = now;
        workflows::save_draft(tx, out.store_id, id, &edit, later)?;
        wf::publish(tx, out.store_id, id, out.user_id, false, later)?;
    }
    Ok(())
}

/// 3 suppliers and purchase orders in every status, through purchasing's writes (receipts
/// add stock through the inventory's one change, as the API's do).
fn seed_purchasing(
    tx: &Tx<'_>,
    store: StoreId,
    offers: &[Offer],
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    use crate::purchasing::model::{PurchaseOrderItemIn, PurchaseOrderStatus as S, ReceiveItemIn};
    use crate::purchasing::store::{self as purchasing, SupplierFields};
    use crate::purchasing::writes;

    let suppliers = [
        ("Malharia Sul", "vendas@malharia-sul.example", "Rita Moraes"),
        (
            "Cerâmica Serra",
            "pedidos@ceramica-serra.example",
            "Otávio Reis",
        ),
        (
            "Papelaria Atlântico",
            "comercial@atlantico.example",
            "Lúcia Prado",
        ),
    ];
    let mut ids = Vec::new();
    for (n, (name, email, contact)) in (0_i64..).zip(suppliers) {
        let id = crate::ids::SupplierId::new();
        let f = SupplierFields {
            name: Some(name.to_owned()),
            email: Some(Some(email.to_owned())),
            phone: Some(Some(format!("+55 11 4000-10{n:02}"))),
            contact_name: Some(Some(contact.to_owned())),
            notes: Some(Some("Pagamento em 30 dias".to_owned())),
        };
        purchasing::insert_supplier(tx, store, id, &f, now - Duration::days(60 - n))?;
        ids.push(id);
    }
    // (supplier, status reached, days ago); two lines of 20 units each.
    let plan = [
        (0, S::Received, 40),
        (1, S::PartiallyReceived, 20),
        (2, S::Ordered, 10),
        (0, S::Cancelled, 8),
        (1, S::Draft, 2),
        (2, S::Draft, 1),
    ];
    for (n, (supplier, status, days)) in plan.into_iter().enumerate() {
        let at = now - Duration::days(days);
        let items: Vec<PurchaseOrderItemIn> = offers
            .iter()
            .skip(n * 2)
            .take(2)
            .map(|o| PurchaseOrderItemIn {
                variant_id: o.variant,
                quantity: 20,
                unit_cost_cents: 1500,
            })
            .collect();
        let expected = Some(time::format(at + Duration::days(14)));
        let po = writes::create(tx, store, ids[supplier], &items, expected, None, at)?;
        if status == S::Draft {
            continue;
        }
        if status == S::Cancelled {
            writes::transition(tx, store, po.id, &[S::Draft], S::Cancelled, at)?;
            continue;
        }
        writes::transition(tx, store, po.id, &[S::Draft], S::Ordered, at)?;
        let take = match status {
            S::Received => 20,
            S::PartiallyReceived => 8,
            _ => continue,
        };
        let receipt: Vec<ReceiveItemIn> = items
            .iter()
            .map(|i| ReceiveItemIn {
                variant_id: i.variant_id,
                quantity: take,
            })
            .collect();
        writes::receive(tx, store, po.id, &receipt, at + Duration::days(7))?;
    }
    Ok(())
}

/// 5 storefront pages, 3 published, through the pages area's writes (rendered and
/// sanitised as the API's are); the policy page has a few versions.
fn seed_pages(tx: &Tx<'_>, store: StoreId, now: DateTime<Utc>) -> Result<(), AppError> {
    use crate::pages::model::{PageStatus, Seo};
    use crate::pages::writes::{self, Body, NewPage, PageChange};

    let pages = [
        (
            "Sobre nós",
            "# Nossa história\n\nPeças feitas à mão desde 2015, em pequenos lotes.",
            PageStatus::Published,
        ),
        (
            "Trocas e devoluções",
            "Você tem **30 dias** para trocar. Escreva para [trocas@loja.example](mailto:trocas@loja.example).",
            PageStatus::Published,
        ),
        (
            "Frete e prazos",
            "| Região | Prazo |\n|---|---|\n| Sudeste | 3 dias úteis |\n| Demais | 7 dias úteis |",
            PageStatus::Published,
        ),
        (
            "Perguntas frequentes",
            "## Como cuido da peça?\n\nLave à mão, em água fria.",
            PageStatus::Draft,
        ),
        ("Black Friday", "Em breve.", PageStatus::Draft),
    ];
    for (n, (title, body, status)) in (0_i64..).zip(pages) {
        let at = now - Duration::days(30 - n);
        let page = writes::create(
            tx,
            store,
            NewPage {
                title: title.to_owned(),
                slug: None,
                body: Body::new(body.to_owned()),
                status,
                seo: Seo {
                    title: Some(title.to_owned()),
                    description: None,
                },
            },
            at,
        )?;
        if n == 1 {
            for days in [20, 10] {
                let change = PageChange {
                    body: Some(Body::new(format!("{body}\n\nAtualizado há {days} dias."))),
                    ..PageChange::default()
                };
                writes::update(tx, store, page.id, change, now - Duration::days(days))?;
            }
        }
    }
    Ok(())
}
