/*
 * merchant-admin chat widget: plain JavaScript, no build step, no dependencies. ASCII only
 * (non-ASCII text is escaped), so it reads right whatever charset a proxy or page assumes.
 * Embed: <script src="https://HOST/widget.js" data-key="CHANNEL_KEY"></script>
 * Optional: data-title, data-color (#rgb or #rrggbb), data-name, data-email (the shopper).
 *
 * The contract it relies on (issue 15; spec 2.2, 2.8, 4.9, 6.3, 6.4). BASE = this script's
 * origin. REST calls send the visitor token as X-Visitor-Token.
 *   POST BASE/v1/widget/{key}/conversations {name?, email?}
 *        -> 201 {conversation_id, visitor_token}   (on the first message sent, not on open)
 *   GET  .../conversations/{id}/messages?limit&cursor   -> Page {data, has_more, next_cursor},
 *        newest first; with after=<message id>: oldest first, only newer than it
 *   POST .../conversations/{id}/messages {text} (Idempotency-Key) -> 201 {message, conversation}
 *   POST .../conversations/{id}/read    marks the team's messages read
 *   Message (2.8): id, sender (visitor|agent|bot|system), text, delivery_status
 *        (sent|delivered|read|failed), created_at, attachments [{name, mime_type, path}]
 *   Errors (2.3): {error, code}; 401/403/404 on the conversation means it is gone.
 *   WS   BASE(ws:|wss:)/v1/ws/widget?key&conversation_id&token
 *        server: hello first, then {type, store_id, conversation_id, audience, data, origin}:
 *        message:new / message:updated (data = message), conversation:updated,
 *        typing {from, typing}, resync, pong; other types are ignored.
 *        client: {type:"typing", typing}, {type:"ping"} every 25 s; no pong in 10 s = dead.
 *   Reconnect: backoff 1, 2, 4 ... 30 s with jitter, reset after a connection that lasted;
 *   after a reconnect or resync: GET messages?after=<last id>&limit=100, then the same with
 *   cursor=<next_cursor> while has_more; messages are replaced by id.
 *   localStorage["merchant-admin-widget:" + key] = {conversation_id, visitor_token}.
 */
(function () {
  "use strict";
  var script = document.currentScript;
  var key = script && script.getAttribute("data-key");
  if (!key) {
    console.warn("merchant-admin widget: the script tag needs data-key");
    return;
  }
  if (document.getElementById("ma-widget")) return; // pasted twice

  var BASE = new URL(script.src, location.href).origin;
  var STORE_KEY = "merchant-admin-widget:" + key;
  var PING_EVERY = 25000, PONG_WITHIN = 10000, LASTED = 30000, MAX_BACKOFF = 30000;
  var TYPING_EVERY = 3000, TYPING_IDLE = 5000, THEIR_TYPING_TTL = 6000;
  var STATUS_TEXT = { sending: "Sending\u2026", sent: "Sent", delivered: "Delivered", read: "Read", failed: "Not delivered" };

  var st = {
    conv: loadConv(),     // {conversation_id, visitor_token} or null
    messages: new Map(),  // id -> message
    olderCursor: null,    // next page of history, when there is one
    open: false,
    unread: 0,
    sending: false,
    draft: null,          // {text, idem}: a retry of the same text reuses its key
  };

  // ---------- storage ----------
  function loadConv() {
    try {
      var c = JSON.parse(localStorage.getItem(STORE_KEY) || "null");
      return c && c.conversation_id && c.visitor_token ? c : null;
    } catch (e) {
      return null; // storage blocked (privacy mode): the chat still works for this page
    }
  }
  function saveConv(c) {
    st.conv = c;
    try {
      if (c) localStorage.setItem(STORE_KEY, JSON.stringify(c));
      else localStorage.removeItem(STORE_KEY);
    } catch (e) { /* see loadConv */ }
  }

  // ---------- REST ----------
  function ApiError(status, code, message) {
    this.status = status;
    this.code = code || "";
    this.message = message || "";
  }
  function convPath(suffix) {
    return "/v1/widget/" + encodeURIComponent(key) + "/conversations/" +
      encodeURIComponent(st.conv.conversation_id) + suffix;
  }
  function api(method, path, body, idem) {
    var headers = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (st.conv) headers["X-Visitor-Token"] = st.conv.visitor_token;
    if (idem) headers["Idempotency-Key"] = idem;
    return fetch(BASE + path, {
      method: method,
      headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
    }).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { /* not JSON */ }
        if (!res.ok) throw new ApiError(res.status, data && data.code, data && data.error);
        return data;
      });
    }, function () {
      throw new ApiError(0, "network", "");
    });
  }
  // 401/404: the conversation or token is gone for good. A 403 (channel turned off, origin
  // not allowed) may pass, so the conversation is kept for later.
  function gone(err) {
    return err instanceof ApiError && (err.status === 401 || err.status === 404);
  }
  function uuid() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    return "w" + Date.now().toString(36) + Math.random().toString(36).slice(2);
  }

  function createConversation() {
    var profile = {};
    if (script.getAttribute("data-name")) profile.name = script.getAttribute("data-name");
    if (script.getAttribute("data-email")) profile.email = script.getAttribute("data-email");
    return api("POST", "/v1/widget/" + encodeURIComponent(key) + "/conversations", profile)
      .then(function (c) {
        saveConv({ conversation_id: c.conversation_id, visitor_token: c.visitor_token });
        connect();
      });
  }

  function postMessage(text, idem) {
    return api("POST", convPath("/messages"), { text: text }, idem).then(function (out) {
      upsert(out.message);
      mergeConversation(out.conversation);
    });
  }

  // Creates the conversation on the first message; a stored one that is gone is replaced once.
  function send(text) {
    if (!st.draft || st.draft.text !== text) st.draft = { text: text, idem: uuid() };
    var idem = st.draft.idem;
    var first = st.conv ? Promise.resolve() : createConversation();
    return first.then(function () {
      return postMessage(text, idem).catch(function (err) {
        if (!gone(err)) throw err;
        forget();
        return createConversation().then(function () { return postMessage(text, uuid()); });
      });
    });
  }

  function loadHistory() {
    if (!st.conv) return Promise.resolve();
    return api("GET", convPath("/messages?limit=50")).then(function (page) {
      page.data.forEach(upsert);
      st.olderCursor = page.has_more ? page.next_cursor : null;
      render();
    });
  }

  function loadOlder() {
    if (!st.conv || !st.olderCursor) return;
    api("GET", convPath("/messages?limit=50&cursor=" + encodeURIComponent(st.olderCursor)))
      .then(function (page) {
        page.data.forEach(upsert);
        st.olderCursor = page.has_more ? page.next_cursor : null;
        render({ keepScroll: true });
      }, showError);
  }

  // Events are not replayed (6.4): fetch what is newer than the last message we hold.
  function catchUp() {
    var last = sorted().filter(function (m) { return !m.local; }).pop();
    if (!last) return loadHistory();
    var after = "/messages?after=" + encodeURIComponent(last.id) + "&limit=100";
    function page(cursor) {
      var q = cursor ? after + "&cursor=" + encodeURIComponent(cursor) : after;
      return api("GET", convPath(q)).then(function (p) {
        p.data.forEach(upsert);
        return p.has_more && p.next_cursor ? page(p.next_cursor) : null;
      });
    }
    return page(null).then(function () { render(); });
  }

  var readPending = false;
  function markRead() {
    if (!st.conv || !st.open || readPending || document.hidden) return;
    var unseen = sorted().some(function (m) {
      return m.sender !== "visitor" && m.sender !== "system" && !m.read_at && !m.seen;
    });
    if (!unseen) return;
    readPending = true;
    st.messages.forEach(function (m) { if (m.sender !== "visitor") m.seen = true; });
    api("POST", convPath("/read")).catch(function () { /* best effort */ })
      .then(function () { readPending = false; });
  }

  // ---------- messages ----------
  function upsert(m) {
    if (!m || !m.id) return;
    var had = st.messages.get(m.id);
    if (had && had.seen) m.seen = true;
    st.messages.set(m.id, m);
    if (!had && m.sender !== "visitor" && !st.open) st.unread += 1;
    if (m.sender !== "visitor") setTheirTyping(false);
  }
  function sorted() {
    return Array.from(st.messages.values()).sort(function (a, b) {
      if (a.created_at !== b.created_at) return a.created_at < b.created_at ? -1 : 1;
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    });
  }
  function mergeConversation(c) {
    if (!c) return;
    if (typeof c.unread_for_visitor === "number" && !st.open) st.unread = c.unread_for_visitor;
    renderBadge();
  }
  // The stored conversation is gone (expired token, deleted): start afresh on the next send.
  function forget() {
    disconnect();
    saveConv(null);
    st.messages.clear();
    st.olderCursor = null;
    render();
  }

  // ---------- socket ----------
  var ws = null, pingTimer = null, pongTimer = null, retryTimer = null;
  var attempt = 0, openedAt = 0;

  function socketUrl() {
    var u = new URL("/v1/ws/widget", BASE);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    u.searchParams.set("key", key);
    u.searchParams.set("conversation_id", st.conv.conversation_id);
    // Browsers cannot set headers on a WebSocket, so the token goes in the query.
    u.searchParams.set("token", st.conv.visitor_token);
    return u.toString();
  }

  function connect() {
    if (!st.conv || ws) return;
    clearTimeout(retryTimer);
    var sock = new WebSocket(socketUrl());
    var wasOpen = false;
    ws = sock;
    sock.onopen = function () {
      wasOpen = true;
      openedAt = Date.now();
      pingTimer = setInterval(ping, PING_EVERY);
      // Whatever happened while we were away (or before the first connect) comes over REST.
      catchUp().catch(function () { /* the next reconnect tries again */ });
    };
    sock.onmessage = function (e) {
      var ev;
      try { ev = JSON.parse(e.data); } catch (err) { return; }
      onEvent(ev);
    };
    sock.onclose = function () {
      if (ws !== sock) return; // closed on purpose
      stopTimers();
      ws = null;
      if (Date.now() - openedAt >= LASTED && wasOpen) attempt = 0;
      if (wasOpen) return retry();
      // A refused handshake hides its status from scripts: ask REST whether we are still welcome.
      api("GET", convPath("/messages?limit=1")).then(retry, function (err) {
        if (gone(err)) forget();
        else retry();
      });
    };
  }

  function retry() {
    if (!st.conv) return;
    var delay = Math.min(MAX_BACKOFF, 1000 * Math.pow(2, attempt));
    attempt += 1;
    // Jitter spreads the reconnects of many shoppers after a server restart.
    retryTimer = setTimeout(connect, delay / 2 + Math.random() * delay / 2);
  }

  function stopTimers() {
    clearInterval(pingTimer);
    clearTimeout(pongTimer);
    pingTimer = pongTimer = null;
  }

  function disconnect() {
    clearTimeout(retryTimer);
    stopTimers();
    var sock = ws;
    ws = null;
    if (sock) sock.close();
  }

  function sendFrame(frame) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  }

  function ping() {
    sendFrame({ type: "ping" });
    clearTimeout(pongTimer);
    pongTimer = setTimeout(function () {
      if (ws) ws.close(); // dead: onclose reconnects
    }, PONG_WITHIN);
  }

  function onEvent(ev) {
    switch (ev && ev.type) {
      case "pong":
        clearTimeout(pongTimer);
        break;
      case "message:new":
      case "message:updated":
        upsert(ev.data);
        render();
        markRead();
        break;
      case "conversation:updated":
        mergeConversation(ev.data);
        break;
      case "typing":
        if (ev.data && ev.data.from !== "visitor") setTheirTyping(!!ev.data.typing);
        break;
      case "resync":
        catchUp().catch(function () { /* the next event or reconnect tries again */ });
        break;
      default: // hello and types we do not know
    }
  }

  // ---------- typing ----------
  var typingSentAt = 0, typingIdle = null, theirTypingTimer = null;
  function noteTyping() {
    if (Date.now() - typingSentAt > TYPING_EVERY) {
      typingSentAt = Date.now();
      sendFrame({ type: "typing", typing: true });
    }
    clearTimeout(typingIdle);
    typingIdle = setTimeout(stopTyping, TYPING_IDLE);
  }
  function stopTyping() {
    clearTimeout(typingIdle);
    if (typingSentAt) sendFrame({ type: "typing", typing: false });
    typingSentAt = 0;
  }
  function setTheirTyping(on) {
    clearTimeout(theirTypingTimer);
    // No repeat within about 6 s means they stopped (6.2).
    if (on) theirTypingTimer = setTimeout(function () { setTheirTyping(false); }, THEIR_TYPING_TTL);
    if (ui.typing) ui.typing.hidden = !on;
  }

  // ---------- UI ----------
  var CSS = [
    "#ma-widget{--maw-accent:#4f46e5;position:fixed;right:20px;bottom:20px;z-index:2147483000;",
    "font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1f2330}",
    "#ma-widget *{box-sizing:border-box}",
    "#ma-widget [hidden]{display:none!important}",
    "#ma-widget-bubble{width:58px;height:58px;border:0;border-radius:50%;background:var(--maw-accent);",
    "color:#fff;cursor:pointer;box-shadow:0 8px 24px rgba(20,20,50,.25);display:flex;align-items:center;",
    "justify-content:center;position:relative;transition:transform .15s ease}",
    "#ma-widget-bubble:hover{transform:scale(1.06)}",
    "#ma-widget-bubble svg{width:28px;height:28px}",
    ".maw-badge{position:absolute;top:-2px;right:-2px;min-width:20px;height:20px;padding:0 6px;",
    "border-radius:10px;background:#e11d48;color:#fff;font-size:12px;font-weight:600;line-height:20px}",
    "#ma-widget-panel{position:absolute;right:0;bottom:74px;width:360px;height:min(560px,calc(100vh - 110px));",
    "background:#fff;border-radius:16px;box-shadow:0 16px 48px rgba(20,20,50,.22);display:flex;",
    "flex-direction:column;overflow:hidden}",
    ".maw-head{background:var(--maw-accent);color:#fff;padding:16px 18px;display:flex;align-items:center;gap:12px}",
    ".maw-head h2{margin:0;font-size:16px;font-weight:600}",
    ".maw-head p{margin:2px 0 0;font-size:12px;opacity:.85}",
    ".maw-head .maw-titles{flex:1}",
    ".maw-close{background:transparent;border:0;color:#fff;font-size:22px;line-height:1;cursor:pointer;",
    "opacity:.85;padding:4px 6px;border-radius:6px}",
    ".maw-close:hover{opacity:1;background:rgba(255,255,255,.15)}",
    ".maw-body{flex:1;overflow-y:auto;background:#f6f7fb;padding:14px 12px}",
    "#ma-widget-messages{list-style:none;margin:0;padding:0;display:flex;flex-direction:column;gap:8px}",
    ".maw-msg{max-width:78%;display:flex;flex-direction:column}",
    ".maw-msg .maw-text{padding:9px 13px;border-radius:16px;white-space:pre-wrap;word-wrap:break-word}",
    ".maw-visitor{align-self:flex-end;align-items:flex-end}",
    ".maw-visitor .maw-text{background:var(--maw-accent);color:#fff;border-bottom-right-radius:4px}",
    ".maw-agent,.maw-bot{align-self:flex-start}",
    ".maw-agent .maw-text,.maw-bot .maw-text{background:#fff;border:1px solid #e6e8ef;border-bottom-left-radius:4px}",
    ".maw-system{align-self:center;max-width:90%;color:#6b7186;font-size:12px;text-align:center}",
    ".maw-meta{font-size:11px;color:#8a90a2;margin-top:2px}",
    ".maw-failed .maw-meta{color:#e11d48}",
    ".maw-att{display:flex;align-items:center;gap:4px;margin-top:4px;font-size:12px;color:inherit;text-decoration:underline;",
    "background:none;border:0;padding:0;cursor:pointer}",
    ".maw-empty{color:#6b7186;text-align:center;margin:24px 12px}",
    ".maw-older{display:block;margin:0 auto 10px;background:none;border:0;color:var(--maw-accent);cursor:pointer;font-size:12px}",
    ".maw-typing{padding:4px 16px 0;background:#f6f7fb;color:#6b7186;font-size:12px}",
    ".maw-dots span{display:inline-block;width:5px;height:5px;margin-right:3px;border-radius:50%;",
    "background:#8a90a2;animation:maw-blink 1.2s infinite}",
    ".maw-dots span:nth-child(2){animation-delay:.2s}.maw-dots span:nth-child(3){animation-delay:.4s}",
    "@keyframes maw-blink{0%,80%,100%{opacity:.25}40%{opacity:1}}",
    ".maw-error{padding:8px 16px;background:#fff1f2;color:#be123c;font-size:12px;border-top:1px solid #ffe4e6}",
    ".maw-form{display:flex;gap:8px;align-items:flex-end;padding:10px 12px;border-top:1px solid #eceef3;background:#fff}",
    "#ma-widget-input{flex:1;resize:none;border:1px solid #dfe2ea;border-radius:12px;padding:9px 12px;",
    "font:inherit;max-height:120px;outline:none}",
    "#ma-widget-input:focus{border-color:var(--maw-accent)}",
    "#ma-widget-send{width:40px;height:40px;flex:none;border:0;border-radius:50%;background:var(--maw-accent);",
    "color:#fff;cursor:pointer;display:flex;align-items:center;justify-content:center}",
    "#ma-widget-send:disabled{opacity:.5;cursor:default}",
    "#ma-widget-send svg{width:18px;height:18px}",
    "@media (max-width:480px){#ma-widget-panel{position:fixed;inset:0;width:auto;height:auto;border-radius:0}}",
  ].join("\n");

  var ICON_CHAT = '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" ' +
    'stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d="M21 12a8 8 0 0 1-11.6 ' +
    '7.1L4 20l1.1-4.4A8 8 0 1 1 21 12z"/></svg>';
  var ICON_DOWN = '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.2" ' +
    'stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d="M6 9l6 6 6-6"/></svg>';
  var ICON_CLIP = '<svg viewBox="0 0 24 24" width="13" height="13" fill="none" stroke="currentColor" stroke-width="2" ' +
    'aria-hidden="true"><path d="M21 11l-9 9a6 6 0 0 1-8.5-8.5l9-9a4 4 0 0 1 5.7 5.7l-9 9a2 2 0 0 1-2.8-2.8l8.3-8.3"/></svg>';
  var ICON_SEND = '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.2" ' +
    'stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d="M5 12h14M13 6l6 6-6 6"/></svg>';

  // Styles through CSSOM, which a page's CSP does not block the way it blocks <style> text.
  function addStyles() {
    if ("adoptedStyleSheets" in document && window.CSSStyleSheet) {
      try {
        var sheet = new CSSStyleSheet();
        sheet.replaceSync(CSS);
        document.adoptedStyleSheets = document.adoptedStyleSheets.concat([sheet]);
        return;
      } catch (e) { /* fall back to a <style> element */ }
    }
    var el = document.createElement("style");
    el.textContent = CSS;
    document.head.appendChild(el);
  }

  function h(tag, attrs, children) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") el.textContent = attrs[k];
      else if (k === "html") el.innerHTML = attrs[k]; // constant icons only
      else el.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) el.appendChild(c); });
    return el;
  }

  var ui = {};
  function build() {
    addStyles();
    var title = script.getAttribute("data-title") || "Chat with us";
    ui.badge = h("span", { class: "maw-badge", "data-testid": "widget-badge", hidden: "" });
    ui.bubble = h("button", { id: "ma-widget-bubble", "data-testid": "widget-bubble", type: "button",
      "aria-label": "Open chat", "aria-expanded": "false", "aria-controls": "ma-widget-panel",
      html: ICON_CHAT }, []);
    ui.bubble.appendChild(ui.badge);
    ui.close = h("button", { class: "maw-close", "data-testid": "widget-close", type: "button",
      "aria-label": "Close chat", text: "\u00d7" });
    ui.list = h("ol", { id: "ma-widget-messages", "data-testid": "widget-messages", "aria-live": "polite" });
    ui.empty = h("p", { class: "maw-empty", "data-testid": "widget-empty",
      text: "Hi there! Ask us anything. We usually reply within a few minutes." });
    ui.older = h("button", { class: "maw-older", type: "button", "data-testid": "widget-older",
      text: "Load earlier messages", hidden: "" });
    ui.body = h("div", { class: "maw-body" }, [ui.older, ui.empty, ui.list]);
    ui.typing = h("div", { class: "maw-typing", "data-testid": "widget-typing", hidden: "" },
      [h("span", { class: "maw-dots" }, [h("span"), h("span"), h("span")]), h("span", { text: " typing" })]);
    ui.error = h("div", { class: "maw-error", "data-testid": "widget-error", role: "alert", hidden: "" });
    ui.input = h("textarea", { id: "ma-widget-input", "data-testid": "widget-input", rows: "1",
      placeholder: "Write a message\u2026", "aria-label": "Message", maxlength: "4000" });
    ui.send = h("button", { id: "ma-widget-send", "data-testid": "widget-send", type: "submit",
      "aria-label": "Send", html: ICON_SEND });
    ui.form = h("form", { class: "maw-form" }, [ui.input, ui.send]);
    ui.panel = h("section", { id: "ma-widget-panel", "data-testid": "widget-panel", role: "dialog",
      "aria-label": title, hidden: "" }, [
      h("header", { class: "maw-head" }, [
        h("div", { class: "maw-titles" }, [h("h2", { text: title }),
          h("p", { text: "We're here to help" })]),
        ui.close,
      ]),
      ui.body, ui.typing, ui.error, ui.form,
    ]);
    ui.root = h("div", { id: "ma-widget", "data-testid": "widget" }, [ui.panel, ui.bubble]);
    var color = script.getAttribute("data-color");
    if (color && /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.test(color)) ui.root.style.setProperty("--maw-accent", color);
    document.body.appendChild(ui.root);

    ui.bubble.addEventListener("click", function () { setOpen(!st.open); });
    ui.close.addEventListener("click", function () { setOpen(false); });
    ui.older.addEventListener("click", loadOlder);
    ui.form.addEventListener("submit", function (e) { e.preventDefault(); submit(); });
    ui.input.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); }
      if (e.key === "Escape") setOpen(false);
    });
    ui.input.addEventListener("input", function () {
      autosize();
      if (ui.input.value.trim()) noteTyping(); else stopTyping();
    });
    document.addEventListener("visibilitychange", markRead);
  }

  function autosize() {
    ui.input.style.height = "auto";
    ui.input.style.height = Math.min(ui.input.scrollHeight + 2, 120) + "px";
  }

  function setOpen(open) {
    st.open = open;
    ui.panel.hidden = !open;
    ui.bubble.setAttribute("aria-expanded", String(open));
    ui.bubble.setAttribute("aria-label", open ? "Close chat" : "Open chat");
    ui.bubble.firstChild.outerHTML = open ? ICON_DOWN : ICON_CHAT;
    if (open) {
      st.unread = 0;
      render({ toBottom: true });
      ui.input.focus();
      markRead();
    } else {
      stopTyping();
    }
    renderBadge();
  }

  function submit() {
    var text = ui.input.value.trim();
    if (!text || st.sending) return;
    st.sending = true;
    ui.send.disabled = true;
    showError(null);
    stopTyping();
    // The text stays in the input until the server has it, so a failure loses nothing.
    send(text).then(function () {
      st.draft = null;
      if (ui.input.value.trim() === text) ui.input.value = "";
      autosize();
      render({ toBottom: true });
    }, showError).then(function () {
      st.sending = false;
      ui.send.disabled = false;
    });
  }

  function showError(err) {
    if (!err) {
      ui.error.hidden = true;
      ui.error.textContent = "";
      return;
    }
    var msg;
    if (err.status === 0) msg = "We can't reach the chat right now. Check your connection and try again.";
    else if (err.status === 429) msg = "You're sending messages too quickly. Please wait a moment.";
    else if (err.status === 422 && err.message) msg = err.message;
    else if (err.status === 404 || err.status === 403) msg = "Chat isn't available right now. Please try again later.";
    else msg = "Your message couldn't be sent. Please try again.";
    ui.error.textContent = msg;
    ui.error.hidden = false;
  }

  function renderBadge() {
    ui.badge.textContent = st.unread > 9 ? "9+" : String(st.unread);
    ui.badge.hidden = st.open || st.unread < 1;
  }

  function render(opts) {
    renderBadge();
    if (!st.open) return;
    var body = ui.body;
    var atBottom = body.scrollHeight - body.scrollTop - body.clientHeight < 40;
    var fromBottom = body.scrollHeight - body.scrollTop;
    var items = sorted();
    ui.list.textContent = "";
    items.forEach(function (m) { ui.list.appendChild(renderMessage(m)); });
    ui.empty.hidden = items.length > 0;
    ui.older.hidden = !st.olderCursor;
    // Stay at the bottom unless the shopper scrolled up to read; keep the place when
    // older messages are added above.
    if (opts && opts.keepScroll) body.scrollTop = body.scrollHeight - fromBottom;
    else if (atBottom || (opts && opts.toBottom)) body.scrollTop = body.scrollHeight;
  }

  function renderMessage(m) {
    var sender = ["visitor", "agent", "bot", "system"].indexOf(m.sender) >= 0 ? m.sender : "agent";
    var li = h("li", { class: "maw-msg maw-" + sender + (m.delivery_status === "failed" ? " maw-failed" : ""),
      "data-testid": "widget-message", "data-id": m.id, "data-sender": sender });
    li.appendChild(h("div", { class: "maw-text", text: m.text || "" }));
    (m.attachments || []).forEach(function (a) {
      var b = h("button", { class: "maw-att", type: "button", html: ICON_CLIP }, [h("span", { text: a.name || a.mime_type || "Attachment" })]);
      b.addEventListener("click", function () { openAttachment(a); });
      li.lastChild.appendChild(b);
    });
    if (sender === "visitor") {
      var status = STATUS_TEXT[m.delivery_status] || "";
      li.appendChild(h("div", { class: "maw-meta", "data-testid": "widget-status", text: status }));
    }
    return li;
  }

  // Attachment links need the visitor token, so they are fetched, not linked.
  function openAttachment(a) {
    if (!a.path || !st.conv) return;
    fetch(BASE + a.path, { headers: { "X-Visitor-Token": st.conv.visitor_token }, credentials: "omit" })
      .then(function (res) {
        if (!res.ok) throw new ApiError(res.status, "", "");
        return res.blob();
      })
      .then(function (blob) {
        // A blob URL runs in this page's origin: only types that run nothing are opened,
        // anything else (a page, an SVG) is saved as a file.
        var shown = /^(image\/(png|jpeg|gif|webp)|application\/pdf|text\/plain|audio\/|video\/)/.test(blob.type);
        var url = URL.createObjectURL(shown ? blob : new Blob([blob], { type: "application/octet-stream" }));
        if (shown) window.open(url, "_blank", "noopener");
        else { var l = h("a", { href: url, download: a.name || "file" }); l.click(); }
        setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
      }, showError);
  }

  function start() {
    build();
    if (st.conv) {
      // A reload resumes: history first, then live events.
      loadHistory().then(connect, function (err) {
        if (gone(err)) forget();
        else connect(); // its catch-up loads what we missed
      });
    }
  }

  if (document.body) start();
  else document.addEventListener("DOMContentLoaded", start);
})();
