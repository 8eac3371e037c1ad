//! Storefront pages (issue 20 "Storefront pages (CMS)"): CRUD, slugs, sanitised HTML,
//! versions with restore, and the storefront's published-only view.

use serde_json::{Value, json};

use crate::storefront::Front;
use crate::support::{Receiver, Reply, Shop, patch, post, spawn_app};

fn delete() -> reqwest::Method {
    reqwest::Method::DELETE
}

impl Shop {
    async fn new_page(&self, body: Value) -> Reply {
        self.app
            .call(post(), &self.path("pages"), &self.token, Some(body))
            .await
    }

    async fn page(&self, title: &str, status: &str) -> Value {
        let r = self
            .new_page(
                json!({"title": title, "body_markdown": format!("# {title}"), "status": status}),
            )
            .await;
        r.expect(201);
        r.body.clone()
    }

    async fn edit_page(&self, page: &Value, body: Value) -> Reply {
        let id = page["id"].as_str().unwrap();
        self.app
            .call(
                patch(),
                &self.path(&format!("pages/{id}")),
                &self.token,
                Some(body),
            )
            .await
    }
}

#[tokio::test]
async fn pages_are_created_read_changed_listed_and_deleted() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let (app, token) = (&shop.app, &shop.token);
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["pages.created", "pages.updated", "pages.deleted"])
        .await;

    let r = shop
        .new_page(
            json!({"title": " Sobre nós ", "body_markdown": "Somos **artesãos**.",
                         "seo": {"title": "Sobre a loja", "description": ""}}),
        )
        .await;
    r.expect(201);
    let page = r.body.clone();
    assert_eq!(page["title"], "Sobre nós");
    // The slug is derived from the title (Shopify's handle); the page starts as a draft.
    assert_eq!(page["slug"], "sobre-nos");
    assert_eq!(page["status"], "draft");
    assert_eq!(page["published_at"], Value::Null);
    assert_eq!(page["version"], 1);
    assert_eq!(
        page["body_html"],
        "<p>Somos <strong>artesãos</strong>.</p>\n"
    );
    assert_eq!(
        page["seo"],
        json!({"title": "Sobre a loja", "description": null})
    );
    let path = shop.path(&format!("pages/{}", page["id"].as_str().unwrap()));
    assert_eq!(app.get_as(&path, token).await.expect(200).body, page);

    // The same title again takes the next free slug.
    let twin = shop.new_page(json!({"title": "Sobre nós"})).await;
    twin.expect(201);
    assert_eq!(twin.body["slug"], "sobre-nos-2");
    assert_eq!(twin.body["body_markdown"], "");

    let r = shop
        .edit_page(&page, json!({"status": "published", "seo": null}))
        .await;
    r.expect(200);
    assert_eq!(r.body["status"], "published");
    assert!(r.body["published_at"].is_string());
    assert_eq!(r.body["seo"], json!({"title": null, "description": null}));

    let published = shop.page("Trocas", "published").await;
    let list = app
        .get_as(
            &shop.path("pages?status=published&include_total=true"),
            token,
        )
        .await;
    list.expect(200);
    assert_eq!(list.body["total"], 2);
    let ids: Vec<&str> = list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            published["id"].as_str().unwrap(),
            page["id"].as_str().unwrap()
        ]
    );
    let drafts = app.get_as(&shop.path("pages?status=draft"), token).await;
    assert_eq!(drafts.body["data"].as_array().unwrap().len(), 1);
    // Paging: one per page, the cursor leads to the next.
    let first = app.get_as(&shop.path("pages?limit=1"), token).await;
    assert_eq!(first.body["has_more"], true);
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let second = app
        .get_as(&shop.path(&format!("pages?limit=1&cursor={cursor}")), token)
        .await;
    second.expect(200);
    assert_ne!(second.body["data"][0]["id"], first.body["data"][0]["id"]);

    app.call(delete(), &path, token, None).await.expect(204);
    app.get_as(&path, token)
        .await
        .expect_error(404, "not_found");
    app.call(delete(), &path, token, None)
        .await
        .expect_error(404, "not_found");
    shop.edit_page(&page, json!({"title": "x"}))
        .await
        .expect_error(404, "not_found");

    let hits = rx.events_in_order(5).await;
    let names: Vec<String> = hits
        .iter()
        .map(|h| h.json()["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "pages.created",
            "pages.created",
            "pages.updated",
            "pages.created",
            "pages.deleted"
        ]
    );
    assert_eq!(hits[0].json()["data"]["slug"], "sobre-nos");
    let audit = app.get_as(&shop.path("audit-log?limit=1"), token).await;
    audit.expect(200);
    assert_eq!(audit.body["data"][0]["action"], "page.deleted");
    assert_eq!(audit.body["data"][0]["resource_id"], page["id"]);
}

#[tokio::test]
async fn bad_page_input_is_422_and_changes_nothing() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let page = shop.page("Frete", "draft").await;
    let big = "a".repeat(256 * 1024 + 1);
    for (body, field) in [
        (json!({"title": ""}), "title"),
        (json!({"title": "x".repeat(256)}), "title"),
        (json!({"title": "T", "slug": "Com Espaço"}), "slug"),
        (json!({"title": "T", "slug": "a_b"}), "slug"),
        (json!({"title": "T", "slug": ""}), "slug"),
        (json!({"title": "T", "slug": "a".repeat(101)}), "slug"),
        (json!({"title": "T", "body_markdown": big}), "body_markdown"),
        (
            json!({"title": "T", "seo": {"title": "s".repeat(71)}}),
            "seo.title",
        ),
        (
            json!({"title": "T", "seo": {"description": "d".repeat(321)}}),
            "seo.description",
        ),
        (json!({"title": "T", "status": "hidden"}), "status"),
        (json!({"title": "T", "colour": "red"}), "colour"),
    ] {
        let r = shop.new_page(body.clone()).await;
        r.expect_error(422, "validation_failed");
        assert!(
            r.body["details"]["fields"].get(field).is_some(),
            "{body}: {}",
            r.text
        );
        shop.edit_page(&page, body.clone())
            .await
            .expect_error(422, "validation_failed");
    }
    // The longest body allowed is accepted.
    let edge = "a".repeat(256 * 1024);
    shop.edit_page(&page, json!({"body_markdown": edge}))
        .await
        .expect(200);
    let list = shop.read("pages?include_total=true").await;
    assert_eq!(list["total"], 1);
}

#[tokio::test]
async fn a_taken_slug_is_409_even_for_concurrent_creates() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let about = shop
        .new_page(json!({"title": "About", "slug": "about"}))
        .await;
    about.expect(201);
    let r = shop
        .new_page(json!({"title": "Other", "slug": "about"}))
        .await;
    r.expect_error(409, "slug_taken");
    assert_eq!(r.body["details"]["slug"], "about");
    let other = shop.page("Other", "draft").await;
    shop.edit_page(&other, json!({"slug": "about"}))
        .await
        .expect_error(409, "slug_taken");
    // Its own slug again is no conflict.
    shop.edit_page(&about.body, json!({"slug": "about", "title": "About us"}))
        .await
        .expect(200);

    // Eight creates of one slug at once: one wins, the others are told it is taken.
    let creates =
        (0..8).map(|i| shop.new_page(json!({"title": format!("FAQ {i}"), "slug": "faq"})));
    let replies = futures::future::join_all(creates).await;
    let won = replies.iter().filter(|r| r.status == 201).count();
    assert_eq!(
        won,
        1,
        "{:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    for r in replies.iter().filter(|r| r.status != 201) {
        r.expect_error(409, "slug_taken");
    }
    let list = shop.read("pages?include_total=true").await;
    assert_eq!(list["total"], 3);

    // Another store may use the same slug.
    let (owner, _) = shop.app.member("other@example.com").await;
    let store = shop.app.open_store(&owner, "Other").await;
    shop.app
        .call(
            post(),
            &format!("/v1/stores/{store}/pages"),
            &owner,
            Some(json!({"title": "About", "slug": "about"})),
        )
        .await
        .expect(201);
}

#[tokio::test]
async fn hostile_markdown_and_html_are_sanitised() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let hostile = r#"# Title

<script>alert("x")</script>
<img src="/a.png" onerror="alert(1)" onload=alert(2)>
<a href="javascript:alert(1)">js</a> <a href=" JaVaScRiPt:alert(1)">mixed</a>

[md link](javascript:alert(1)) [data](data:text/html;base64,PHNjcmlwdD4=) ![i](javascript:x)

<iframe src="https://evil.example"></iframe>
<div style="background:url(javascript:alert(1))" onclick="x()">styled</div>
<svg><script>alert(1)</script></svg>
<form action="https://evil.example"><input name="p"></form>
<object data="x"></object><embed src="x">
<p onmouseover="alert(1)">hover</p>

[ok](https://example.com/a?b=1&c=2) <em>kept</em>
"#;
    let r = shop
        .new_page(json!({"title": "Hostile", "body_markdown": hostile}))
        .await;
    r.expect(201);
    let html = r.body["body_html"].as_str().unwrap();
    // No element or attribute that runs; no link or source to a script (the literal
    // text of a link ammonia emptied may stay: it is text, not a link).
    let lower = html.to_ascii_lowercase();
    for bad in [
        "<script",
        "onerror",
        "onload",
        "onclick",
        "onmouseover",
        "=\"javascript",
        "=\" javascript",
        "=\"data:",
        "<iframe",
        "style=",
        "<form",
        "<input",
        "<object",
        "<embed",
        "<svg",
    ] {
        assert!(!lower.contains(bad), "{bad} survived in {html}");
    }
    // What is harmless stays: headings, emphasis, images, safe links (made nofollow).
    assert!(html.contains("<h1>Title</h1>"), "{html}");
    assert!(html.contains("<em>kept</em>"), "{html}");
    assert!(html.contains(r#"<img src="/a.png">"#), "{html}");
    assert!(
        html.contains(r#"href="https://example.com/a?b=1&amp;c=2""#),
        "{html}"
    );
    assert!(html.contains("noopener"), "{html}");
    // The markdown is kept as written; a change renders again.
    assert_eq!(r.body["body_markdown"], hostile);
    let r = shop
        .edit_page(&r.body, json!({"body_markdown": "<b onclick=x>bold</b>"}))
        .await;
    r.expect(200);
    assert_eq!(r.body["body_html"], "<p><b>bold</b></p>\n");
}

#[tokio::test]
async fn the_last_20_versions_are_kept_and_one_restores_as_a_new_save() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let (app, token) = (&shop.app, &shop.token);
    let page = shop.page("Policy", "draft").await;
    let id = page["id"].as_str().unwrap().to_owned();
    for n in 2..=25 {
        let r = shop
            .edit_page(&page, json!({"body_markdown": format!("Policy v{n}")}))
            .await;
        r.expect(200);
        assert_eq!(r.body["version"], n);
    }
    // A status change, or a save that changes nothing, is not a new version.
    let r = shop.edit_page(&page, json!({"status": "published"})).await;
    assert_eq!(r.body["version"], 25);
    let r = shop
        .edit_page(&page, json!({"body_markdown": "Policy v25"}))
        .await;
    assert_eq!(r.body["version"], 25);

    let versions = |q: String| {
        let path = shop.path(&format!("pages/{id}/versions{q}"));
        async move { app.get_as(&path, token).await }
    };
    let all = versions("?include_total=true&limit=200".into()).await;
    all.expect(200);
    assert_eq!(all.body["total"], 20);
    let numbers: Vec<i64> = all.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, (5..=24).rev().collect::<Vec<_>>());
    assert_eq!(all.body["data"][0]["body_markdown"], "Policy v24");
    // Paged by version, newest first.
    let first = versions("?limit=15".into()).await;
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let rest = versions(format!("?limit=15&cursor={cursor}")).await;
    assert_eq!(rest.body["data"].as_array().unwrap().len(), 5);
    assert_eq!(rest.body["data"][0]["version"], 9);

    let restore = |v: &str| {
        let path = shop.path(&format!("pages/{id}/versions/{v}/restore"));
        async move { app.call(post(), &path, token, None).await }
    };
    let r = restore("10").await;
    r.expect(200);
    assert_eq!(r.body["version"], 26);
    assert_eq!(r.body["body_markdown"], "Policy v10");
    assert_eq!(r.body["body_html"], "<p>Policy v10</p>\n");
    assert_eq!(r.body["status"], "published");
    // The content it replaced is a version now; the oldest one went.
    let all = versions("?limit=200".into()).await;
    assert_eq!(all.body["data"][0]["version"], 25);
    assert_eq!(all.body["data"][0]["body_markdown"], "Policy v25");
    assert_eq!(all.body["data"].as_array().unwrap().len(), 20);
    assert_eq!(all.body["data"][19]["version"], 6);

    restore("5").await.expect_error(404, "not_found");
    restore("999").await.expect_error(404, "not_found");
    restore("x").await.expect_error(422, "validation_failed");
    restore("99999999999")
        .await
        .expect_error(422, "validation_failed");
    // The current version restores as it is.
    let r = restore("26").await;
    assert_eq!(r.body["version"], 26);
    // A title, slug or seo change keeps a version too, and restores all of them.
    let r = shop
        .edit_page(
            &page,
            json!({"title": "Nova", "slug": "nova", "seo": {"title": "S"}}),
        )
        .await;
    assert_eq!(r.body["version"], 27);
    let r = restore("26").await;
    r.expect(200);
    assert_eq!(
        (&r.body["title"], &r.body["slug"], &r.body["seo"]["title"]),
        (&json!("Policy"), &json!("policy"), &Value::Null)
    );
    let missing = shop.path(&format!("pages/{}/versions", uuid::Uuid::now_v7()));
    app.get_as(&missing, token)
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn the_storefront_shows_published_pages_only() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let front = Front::of(&shop).await;
    let draft = shop.page("Rascunho", "draft").await;
    let live = shop.page("Sobre", "published").await;
    let hostile = shop
        .new_page(json!({"title": "Xss", "status": "published",
                         "body_markdown": "<script>x()</script>ok"}))
        .await;
    hostile.expect(201);

    let list = front.get("pages?include_total=true").await;
    list.expect(200);
    assert_eq!(list.body["total"], 2);
    let slugs: Vec<&str> = list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["xss", "sobre"]);
    // Shoppers get the HTML, never the markdown.
    assert!(list.body["data"][0].get("body_markdown").is_none());
    assert!(list.body["data"][0].get("status").is_none());
    assert!(
        !list.body["data"][0]["body_html"]
            .as_str()
            .unwrap()
            .contains("script")
    );

    let r = front.get("pages/sobre").await;
    r.expect(200);
    assert_eq!(r.body["title"], "Sobre");
    assert_eq!(r.body["published_at"], live["published_at"]);
    front
        .get("pages/rascunho")
        .await
        .expect_error(404, "not_found");
    front.get("pages/nada").await.expect_error(404, "not_found");

    // Back to draft: hidden at once, its first publication date kept for the admin.
    let r = shop.edit_page(&live, json!({"status": "draft"})).await;
    assert_eq!(r.body["published_at"], live["published_at"]);
    front
        .get("pages/sobre")
        .await
        .expect_error(404, "not_found");
    // Published again: visible, still with the first date.
    shop.edit_page(&live, json!({"status": "published"}))
        .await
        .expect(200);
    let r = front.get("pages/sobre").await;
    assert_eq!(r.body["published_at"], live["published_at"]);
    // Publishing the draft makes it visible.
    shop.edit_page(&draft, json!({"status": "published"}))
        .await
        .expect(200);
    front.get("pages/rascunho").await.expect(200);

    // Another store's published page is not this key's.
    let other = Shop::open(spawn_app().await, 1).await;
    other.page("Outra", "published").await;
    let other_front = Front::of(&other).await;
    other_front.get("pages/outra").await.expect(200);
    front
        .get("pages/outra")
        .await
        .expect_error(404, "not_found");
    shop.app
        .get("/v1/storefront-api/no-such-key/pages")
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn another_stores_pages_are_404() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let page = shop.page("Minha", "published").await;
    let id = page["id"].as_str().unwrap();
    let (stranger, _) = shop.app.member("stranger@example.com").await;
    let theirs = shop.app.open_store(&stranger, "Theirs").await;
    // Their own store's path with this store's page id: not found.
    let base = format!("/v1/stores/{theirs}/pages/{id}");
    let app = &shop.app;
    app.get_as(&base, &stranger)
        .await
        .expect_error(404, "not_found");
    app.call(patch(), &base, &stranger, Some(json!({"title": "x"})))
        .await
        .expect_error(404, "not_found");
    app.call(delete(), &base, &stranger, None)
        .await
        .expect_error(404, "not_found");
    app.get_as(&format!("{base}/versions"), &stranger)
        .await
        .expect_error(404, "not_found");
    app.call(
        post(),
        &format!("{base}/versions/1/restore"),
        &stranger,
        None,
    )
    .await
    .expect_error(404, "not_found");
    // This store's path: not a member.
    app.get_as(&shop.path(&format!("pages/{id}")), &stranger)
        .await
        .expect_error(404, "not_found");
    assert_eq!(shop.read(&format!("pages/{id}")).await["title"], "Minha");
}
