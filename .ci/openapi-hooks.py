"""Schemathesis hooks for .ci/openapi-check (SCHEMATHESIS_HOOKS; FUZZ_CONFIG names the run's
configuration under .ci/schemathesis/).

1. The body values a run's configuration gives (`"body.customer_id" = ...`: the demo's ids,
   the account's password; an `[[operations]]` block's own for its operations) reach the
   generated bodies of the fuzzing phase only; the
   examples and coverage phases send the document's examples and boundary values, whose ids
   name nothing. Their positive cases get the same values here, for the fields they send,
   so a body meant to be valid is valid; negative cases are left as generated.
2. `DELETE /me/sessions/{session_id}` signs a device out, once, and `POST /me/password`
   signs out every other device: a case that names the account's other device (the id the
   session-end configuration passes) gets a device signed in just for it.
3. A key names one request (spec 8: the same `Idempotency-Key` with another request is 422
   `idempotency_key_reused`), but the generated keys repeat across operations and cases: a
   positive case's key gets a suffix of its own, so it names no earlier request. Negative
   cases keep theirs.
4. A workflow run's `subject` names a record of its `type`: the demo's order or customer.
5. A storefront cart is opened by `POST .../carts`, whose token only its answer carries: the
   positive cases of the examples, coverage and fuzzing phases that name a cart name one
   .ci/openapi-check opened (with a line and a contact), with its token: a checkout its own
   (FUZZ_CHECKOUT_CART_ID), the other calls FUZZ_CART_ID. The stateful phase follows the
   links from the carts it opens.
6. A list's `cursor` is one a previous page answered with (it is signed): a positive case
   sends none rather than a generated one, which no page gave. Negative cases keep theirs.
7. What no operation of a document hands out, a positive case gets as a client would get
   it (FIXTURES below, with .ci/fuzzkit.py): a code from the authenticator app or the
   phone, a recovery code, a signature of the body with the provider's secret, a signed
   link as the server mails it, a fresh cart, invoice or assistant conversation, the
   records `fuzzkit.py setup` made (a failed delivery, a file, a widget conversation).
8. The two sockets (`/ws/conversations`, `/ws/widget`) answer 101 to a WebSocket client's
   upgrade: a positive case is sent as one (the handshake's headers, the demo store or the
   widget conversation with its token and origin), and its connection is closed once the
   101 is read, so no later request is written into the socket it became."""
import base64
import datetime
import hashlib
import hmac
import itertools
import json
import os
import re
import sys
import time
import tomllib
import uuid

import schemathesis
from schemathesis.generation.meta import TestPhase
from schemathesis.generation.modes import GenerationMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzzkit  # noqa: E402 (it lives beside this file)


def body_of(parameters):
    """`field` (or `list[*].field`) to value, from a parameters table's `body.` entries."""
    return {k[len("body."):]: os.path.expandvars(v) if isinstance(v, str) else v
            for k, v in (parameters or {}).items() if k.startswith("body.")}


def load_config():
    """The run's global body values, and each `[[operations]]` block's own: (path regex,
    excluded method regex, values)."""
    path = os.environ.get("FUZZ_CONFIG")
    if not path:
        return {}, []
    with open(path, "rb") as f:
        config = tomllib.load(f)
    blocks = []
    for op in config.get("operations") or []:
        values = body_of(op.get("parameters"))
        if values and "include-path-regex" in op:
            excluded = op.get("exclude-method-regex") or op.get("exclude-method")
            blocks.append((re.compile(op["include-path-regex"]),
                           re.compile(f"^(?:{excluded})$") if excluded else None, values))
    return body_of(config.get("parameters")), blocks


BODY, BLOCKS = load_config()


def values_for(case):
    """The body values for `case`'s operation: the global ones, then its blocks'."""
    values = dict(BODY)
    for path, excluded, own in BLOCKS:
        if path.search(case.path) and not (excluded and excluded.match(case.method.upper())):
            values.update(own)
    return values


def fill(body, key, value):
    if key.endswith("[*]"):
        items = body.get(key[:-3])
        if isinstance(items, list):
            items[:] = [value] * len(items)
    elif "[*]." in key:
        head, field = key.split("[*].", 1)
        for item in body.get(head) or []:
            if isinstance(item, dict) and field in item:
                item[field] = value
    elif key in body:
        body[key] = value


def new_session():
    """A new sign-in of the session-end run's account, through the second factor its
    cases may have turned on (the TOTP secret the hooks set up is kept in FUZZ_STATE)."""
    email, password = os.environ["FUZZ_EMAIL"], os.environ["FUZZ_PASSWORD"]
    status, out = fuzzkit.api("POST", "/auth/login", {"email": email, "password": password})
    if isinstance(out, dict) and out.get("status") == "two_factor_required":
        challenge, secret = out["challenge"], read_state("fuzz-totp-secret")
        code = fuzzkit.next_totp(secret) if secret and "totp" in out["methods"] else None
        if code:
            status, out = fuzzkit.api("POST", "/auth/2fa/totp/verify",
                                      {"challenge": challenge, "totp_code": code})
        else:
            # The messaging-app factor only (a case turned TOTP off, msgapp_confirm it on).
            code = fuzzkit.send_otp(challenge, SESSION_END_PHONE)
            status, out = fuzzkit.api("POST", "/auth/otp/verify",
                                      {"challenge": challenge, "code": code or ""})
    if status != 200:
        raise RuntimeError(f"signing the fuzz account in: {status} {out}")
    return out["session_id"]


def read_state(name):
    try:
        with open(fuzzkit.state_file(name)) as f:
            return f.read().strip() or None
    except FileNotFoundError:
        return None


def write_state(name, value):
    with open(fuzzkit.state_file(name), "w") as f:
        f.write(value)


# --- 7. Fixtures: what a positive case of an operation needs that no response hands out. ----

def set_body(case, **fields):
    if not isinstance(case.body, dict):
        case.body = {}
    case.body.update(fields)


def set_header(case, name, value):
    if case.headers is None:
        case.headers = {}
    for n in [n for n in case.headers if n.lower() == name.lower()]:
        del case.headers[n]
    case.headers[name] = value


def set_query(case, **fields):
    if not isinstance(case.query, dict):
        case.query = {}
    case.query.update(fields)


def sign_with(case, header, secret, prefix=""):
    """The body signed as the server checks it: HMAC-SHA256 of the bytes sent, which are the
    body as `requests` serializes it (`json.dumps`)."""
    try:
        raw = json.dumps(case.body, allow_nan=False).encode()
    except (TypeError, ValueError):
        return  # no JSON body (not set, or not serializable): nothing to sign
    set_header(case, header, prefix + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest())


def tenant_path(rest):
    return f"/tenants/{os.environ['FUZZ_TENANT_ID']}{rest}"


def resume_subscription():
    """A run's cancel leaves nothing to pay: the organization's subscription resumed (a 409
    when it was not canceled changes nothing)."""
    fuzzkit.api("POST", tenant_path("/subscription/resume"), {}, fuzzkit.owner())


def open_invoice():
    """The organization's invoice to pay now, or None."""
    resume_subscription()
    status, out = fuzzkit.api("POST", tenant_path("/subscription/pay"), {}, fuzzkit.owner())
    return out if status == 200 and isinstance(out, dict) else None


# What is scarce or slow to get (ten recovery codes; a phone's code, read from the outbox
# by a process of its own) goes to the first positive case of each operation in each
# phase (a phase whose positive cases are all refused is what schemathesis warns about);
# the rest keep their generated values.
FILLED = set()


def first_in_phase(case):
    """Whether no positive case of `case`'s operation in this phase has had a real value."""
    return (case.method.upper(), case.path, case.meta.phase.name) not in FILLED


def filled(case):
    FILLED.add((case.method.upper(), case.path, case.meta.phase.name))


@schemathesis.hook
def before_generate_case(context, strategy):
    """A scenario of an operation starts (the fuzzing phase runs an operation in several,
    and schemathesis judges each on its own): its first positive case gets the rationed
    fixture again. Not in the stateful phase, which builds a strategy for every link it
    follows: there the first positive case of the run gets it, and the rest are sent what
    the links hand them (a refresh token from the sign-in or refresh before it)."""
    op = context.operation
    if op is not None:
        for key in [k for k in FILLED if k[:2] == (op.method.upper(), op.path)
                    and k[2] != TestPhase.STATEFUL]:
            FILLED.discard(key)
    return strategy


def totp_verify(case):
    signed = fuzzkit.totp_sign_in()
    if signed:
        set_body(case, challenge=signed[0], totp_code=signed[1])
        return True


def recovery_verify(case):
    challenge, code = fuzzkit.twofa_challenge(), fuzzkit.take_recovery_code()
    if challenge and code:
        set_body(case, challenge=challenge, recovery_code=code)
        return True


def otp_send(case):
    challenge = fuzzkit.twofa_challenge()
    if challenge:
        set_body(case, challenge=challenge)
        return True


def otp_verify(case):
    challenge = fuzzkit.twofa_challenge()
    code = challenge and fuzzkit.send_otp(challenge, os.environ["FUZZ_TWOFA_PHONE"])
    if code:
        set_body(case, challenge=challenge, code=code)
        return True


def pix_webhook(case):
    """Signed as the provider signs; the first positive case of a phase pays the open invoice
    of one of the organizations set aside for it (the demo's own stays open for the runs'
    pay and pix.png)."""
    if first_in_phase(case) and isinstance(case.body, dict):
        for tenant in os.environ["FUZZ_PIX_TENANTS"].split(","):
            status, invoice = fuzzkit.api("POST", f"/tenants/{tenant}/subscription/pay", {},
                                          fuzzkit.owner())
            if status == 200 and invoice.get("status") == "open":
                set_body(case, txid=invoice["txid"], amount_cents=invoice["amount_cents"],
                         paid_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
                filled(case)
                break
    sign_with(case, "X-Signature", os.environ["FUZZ_PIX_WEBHOOK_SECRET"])


def pix_png(case):
    invoice = open_invoice()
    if invoice:
        case.path_parameters["invoice_id"] = invoice["id"]


def subscription_pay(case):
    resume_subscription()


def feed(case):
    status, out = fuzzkit.api("POST", fuzzkit.store_path("/ads/feed-token"), {}, fuzzkit.owner())
    if status == 201:
        set_query(case, token=out["token"])


def unsubscribe(case):
    case.path_parameters["token"] = fuzzkit.unsubscribe_token(
        os.environ["FUZZ_STORE_ID"], os.environ["FUZZ_CUSTOMER_ID"])


def ensure_channel(channel_id, settings):
    """The channel on, with the secrets the hooks sign with (a run's PATCH may change them)."""
    fuzzkit.api("PATCH", fuzzkit.store_path(f"/channels/{channel_id}"),
                {"enabled": True, "settings": settings}, fuzzkit.owner())


def msgapp_handshake(case):
    channel = os.environ["FUZZ_MSGAPP_CHANNEL_ID"]
    ensure_channel(channel, fuzzkit.msgapp_channel_settings())
    case.path_parameters["channel_id"] = channel
    set_query(case, **{"hub.mode": "subscribe", "hub.verify_token": fuzzkit.VERIFY_TOKEN})
    if not (case.query or {}).get("hub.challenge"):
        set_query(case, **{"hub.challenge": "fuzz"})


def msgapp_webhook(case):
    channel = os.environ["FUZZ_MSGAPP_CHANNEL_ID"]
    ensure_channel(channel, fuzzkit.msgapp_channel_settings())
    case.path_parameters["channel_id"] = channel
    sign_with(case, "X-Hub-Signature-256", fuzzkit.APP_SECRET, prefix="sha256=")


MAIL_IDS = itertools.count()


def email_inbound(case):
    """The channel's secret, and a sender and Message-ID as a mail carries them (the
    document can say they are strings, not what RFC 5322 makes of them)."""
    channel = os.environ["FUZZ_EMAIL_CHANNEL_ID"]
    ensure_channel(channel, fuzzkit.email_channel_settings())
    case.path_parameters["channel_id"] = channel
    set_header(case, "X-Inbound-Secret", fuzzkit.EMAIL_SECRET)
    if isinstance(case.body, dict):
        case.body.update({"from": "Ana <ana@example.com>",
                          "message_id": f"<fuzz-{RUN}-{next(MAIL_IDS)}@example.com>"})
        # A mail needs text, an HTML part or a file: only one with none gets text.
        if not any(str(case.body.get(k) or "").strip() for k in ("text", "html")) \
                and not case.body.get("attachments"):
            case.body["text"] = "Hello"


def attachment(case):
    case.path_parameters.update(
        conversation_id=os.environ["FUZZ_ATTACHMENT_CONVERSATION_ID"],
        message_id=os.environ["FUZZ_ATTACHMENT_MESSAGE_ID"],
        index=int(os.environ["FUZZ_ATTACHMENT_INDEX"]))


def widget(case):
    case.path_parameters["conversation_id"] = os.environ["FUZZ_WIDGET_CONVERSATION_ID"]
    set_header(case, "X-Visitor-Token", os.environ["FUZZ_VISITOR_TOKEN"])


def delivery_retry(case):
    hook = os.environ["FUZZ_WEBHOOK_ID"]
    fuzzkit.api("PUT", fuzzkit.store_path(f"/webhooks/{hook}"),
                {"is_active": True, "url": "http://127.0.0.1:9/fuzz"}, fuzzkit.owner())
    case.path_parameters.update(webhook_id=hook, delivery_id=os.environ["FUZZ_DELIVERY_ID"])


def chat(message="fuzz"):
    """An assistant turn in a new conversation: the stream's events, name to data."""
    status, text = fuzzkit.api("POST", fuzzkit.store_path("/assistant/chat"),
                               {"message": message}, fuzzkit.owner(), raw=True)
    events = {}
    if status == 200:
        for found in re.finditer(r"^event: (\w+)\ndata: (.*)$", text, re.M):
            try:
                events.setdefault(found.group(1), json.loads(found.group(2)))
            except ValueError:
                pass
    return events


def proposal(case):
    """A proposal of its own to approve or decline: the fake model proposes a stock change
    in every turn."""
    made = chat().get("proposal")
    if made:
        case.path_parameters["proposal_id"] = made["proposal_id"]
        return True


# Where the document's own example of a create names other records, the ids are made up.
MADE_UP_ID = re.compile(r"^[0-9a-f]{8}-8b1e-4b8a-9a51-6a1f0d2c4e7b$")
UNIQUE = {"slug": "fuzz-{n}", "sku": "FUZZ-{n}", "email": "fuzz-{n}@example.com",
          "name": "Fuzz {n}", "url": "http://127.0.0.1:9/fuzz-{n}"}


def example_body(value, n):
    """The document's example made creatable again: unique fields unique, made-up ids out."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(v, str) and MADE_UP_ID.match(v):
                continue
            if isinstance(v, list) and v and all(isinstance(x, str) and MADE_UP_ID.match(x)
                                                 for x in v):
                continue
            out[k] = UNIQUE[k].format(n=n) if k in UNIQUE and isinstance(v, str) \
                else example_body(v, n)
        return out
    if isinstance(value, list):
        return [example_body(v, f"{n}-{i}") for i, v in enumerate(value)]
    return value


def fresh_record(case):
    """A record of its own to delete, made by the collection's create with the document's
    example (generated ids name nothing, and the demo's records must stay for the run)."""
    collection = case.path.rsplit("/", 1)[0]
    content = (case.operation.schema.raw_schema["paths"].get(collection, {}).get("post", {})
               .get("requestBody", {}).get("content", {}).get("application/json", {}))
    if "example" not in content:
        return
    body = example_body(content["example"], f"{RUN}-{next(MAIL_IDS)}")
    status, made = fuzzkit.api("POST", collection.replace(
        "{store_id}", os.environ["FUZZ_STORE_ID"]), body, fuzzkit.owner())
    if status == 201 and isinstance(made, dict) and "id" in made:
        case.path_parameters[case.path.rsplit("{", 1)[1].rstrip("}")] = made["id"]
        return True


def assistant_conversation(case):
    """A conversation of its own to delete: the assistant's chat starts one, and its stream
    names it first."""
    made = chat().get("conversation")
    if made:
        case.path_parameters["conversation_id"] = made["conversation_id"]
        return True


def phone_verify(case):
    phone = "+5511900000002"
    before = fuzzkit.latest_outbox_code(phone)
    status, _ = fuzzkit.api("POST", fuzzkit.store_path("/assistant/phones"),
                            {"phone_e164": phone}, fuzzkit.owner())
    code = fuzzkit.outbox_code(phone, not_code=before) if status < 300 else None
    if code:
        set_body(case, code=code)
        return True


def refund(case):
    """The demo's order is soon refunded in full: a phase's first positive case refunds a
    fresh paid order, at most what it was paid."""
    if not isinstance(case.body, dict):
        return False
    order = fuzzkit.paid_order()
    if order:
        case.path_parameters["order_id"] = order
        case.body["amount_cents"] = min(int(case.body.get("amount_cents") or 1), 100000)
        return True


def receive(case):
    """The demo's ordered purchase order is soon received in full: a phase's first positive
    case receives a unit of a fresh one."""
    if not isinstance(case.body, dict):
        return False
    po, variant = fuzzkit.ordered_purchase_order()
    if po:
        case.path_parameters["purchase_order_id"] = po
        case.body["items"] = [{"variant_id": variant, "quantity": 1}]
        return True


PATCH_PRODUCT = []  # this process's product to change


def patch_product(case):
    """A positive case changes a product of its own, made once (generated ids name none,
    and the demo's variants hold stock, which a change that drops them must not: 409);
    a variant `id` names one of the product's, which generated ones are not."""
    if not PATCH_PRODUCT:
        status, product = fuzzkit.api("POST", fuzzkit.store_path("/products"), {
            "title": "Fuzz patch", "variants": [{"sku": f"FUZZ-PATCH-{RUN}",
                                                  "price_cents": 100}]}, fuzzkit.owner())
        if status != 201:
            return False
        PATCH_PRODUCT.append(product["id"])
    case.path_parameters["product_id"] = PATCH_PRODUCT[0]
    for variant in (case.body or {}).get("variants") or []:
        if isinstance(variant, dict):
            variant.pop("id", None)
    return True


DRAFT_CAMPAIGN = []  # this process's draft campaign to change


def new_draft():
    """A new draft campaign to the demo's segment: its id, or None."""
    status, made = fuzzkit.api("POST", fuzzkit.store_path("/campaigns"), {
        "name": f"Fuzz draft {RUN}-{next(MAIL_IDS)}", "subject": "Fuzz",
        "body_markdown": "Fuzz", "segment_id": os.environ["FUZZ_SEGMENT_ID"]}, fuzzkit.owner())
    return made["id"] if status == 201 else None


def draft_campaign(case):
    """A positive case changes a draft of its own, made once: only a draft takes a change
    (409 past it), and a run's schedule, send or delete may move the demo's on."""
    if not DRAFT_CAMPAIGN:
        made = new_draft()
        if not made:
            return False
        DRAFT_CAMPAIGN.append(made)
    case.path_parameters["campaign_id"] = DRAFT_CAMPAIGN[0]
    return True


def fresh_draft(case):
    """A draft of its own to schedule or delete (either moves it on from draft for good)."""
    made = new_draft()
    if made:
        case.path_parameters["campaign_id"] = made
        return True


def owner_refresh(case):
    """The refresh token of a new sign-in of the demo's owner (each is used once: a token
    used again is 401 and ends its session)."""
    status, out = fuzzkit.api("POST", "/auth/login", {
        "email": os.environ["FUZZ_EMAIL"], "password": os.environ["FUZZ_PASSWORD"]})
    if status == 200 and isinstance(out, dict) and "refresh_token" in out:
        set_body(case, refresh_token=out["refresh_token"])
        return True


def attach_cart(case):
    """An open storefront cart of the store to attach, as a shopper's would be (a generated
    `cart_id` names none); without one, a new cart is opened."""
    try:
        cart, _ = fuzzkit.open_cart(os.environ["FUZZ_VARIANT_ID"])
    except RuntimeError:
        cart = None
    if isinstance(case.body, dict):
        if cart:
            case.body["cart_id"] = cart
        else:
            case.body.pop("cart_id", None)
    return bool(cart)


def in_future(body, field):
    """`body[field]`, a time, made a day from now unless it is already in the future (a rule
    of the clock, which no schema states)."""
    value = body.get(field)
    if not isinstance(value, str):
        return
    now = datetime.datetime.now(datetime.timezone.utc)
    try:
        future = datetime.datetime.fromisoformat(value) > now
    except (ValueError, TypeError):
        future = False  # an RFC 3339 time Python does not read (a leap second, say)
    if not future:
        body[field] = (now + datetime.timedelta(days=1)).isoformat()


def token_in(case):
    """`*` stands alone (a rule between the values) and an expiry is in the future: a
    positive case's scopes that name `*` keep it alone."""
    body = case.body if isinstance(case.body, dict) else {}
    if isinstance(body.get("scopes"), list) and "*" in body["scopes"]:
        body["scopes"] = ["*"]
    in_future(body, "expires_at")


def snooze(case):
    """A conversation is snoozed until a time in the future."""
    if isinstance(case.body, dict):
        in_future(case.body, "snoozed_until")


def analytics_range(case):
    """`from` no later than `to` and at most 366 days before it (a rule between two
    parameters, which no schema states): a `to` that breaks it becomes `from`, as does a
    missing one (today is rarely within 366 days of a generated `from`)."""
    query = case.query if isinstance(case.query, dict) else {}
    try:
        start = datetime.date.fromisoformat(query["from"])
    except (KeyError, TypeError, ValueError):
        return
    try:
        end = datetime.date.fromisoformat(query["to"])
    except (KeyError, TypeError, ValueError):
        end = None
    if end is None or end < start or (end - start).days >= 366:
        query["to"] = query["from"]


PATCH_CHANNELS = {}  # kind -> (id, phone number id): this process's channels to change


def patch_channel(case):
    """A positive case changes a channel of the kind its body is for (a client knows what
    it changes; a channel takes its own kind's settings only, and allowed origins only if
    it is a chat channel), made once per kind: generated ids name none."""
    settings = (case.body or {}).get("settings") if isinstance(case.body, dict) else None
    keys = set(settings) if isinstance(settings, dict) else set()
    if keys & {"phone_number_id", "app_secret", "verify_token"}:
        kind = "msgapp"
    elif keys & {"address", "inbound_secret"}:
        kind = "email"
    elif isinstance(case.body, dict) and case.body.get("allowed_origins") is not None:
        kind = "storefront_chat"
    else:
        kind = "email"
    if kind not in PATCH_CHANNELS:
        # A phone number id is one channel's (409 for a second): a number of its own.
        number = str(int(time.time() * 1000) % 10**12 + next(MAIL_IDS))
        new = {"msgapp": {"kind": "msgapp", "settings": {
                   **fuzzkit.msgapp_channel_settings(), "phone_number_id": number}},
               "email": {"kind": "email", "settings": fuzzkit.email_channel_settings()},
               "storefront_chat": {"kind": "storefront_chat"}}[kind]
        status, channel = fuzzkit.api("POST", fuzzkit.store_path("/channels"),
                                      {**new, "name": f"Fuzz patch {kind}"}, fuzzkit.owner())
        if status != 201:
            return False
        PATCH_CHANNELS[kind] = (channel["id"], number)
    channel_id, number = PATCH_CHANNELS[kind]
    case.path_parameters["channel_id"] = channel_id
    if kind == "msgapp" and "phone_number_id" in keys:
        settings["phone_number_id"] = number  # its own: another channel's is 409
    if kind != "storefront_chat" and isinstance(case.body, dict):
        case.body.pop("allowed_origins", None)  # chat channels only
    return True


def unsubscribe_event(case):
    """An event a turned-off webhook (nothing is delivered to it) is subscribed to, to
    unsubscribe it from (by the store's path, or the root path's query)."""
    hook = os.environ["FUZZ_EVENTS_WEBHOOK_ID"]
    if case.path.startswith("/stores/"):
        event = case.path_parameters.get("event")
        case.path_parameters["webhook_id"] = hook
    else:
        event = (case.query or {}).get("event")
        set_query(case, webhook_id=hook)
    if isinstance(event, str):
        fuzzkit.api("POST", fuzzkit.store_path(f"/webhooks/{hook}/events"),
                    {"events": [event]}, fuzzkit.owner())


def conversation_cart(case):
    """The demo conversation with a cart of one line attached (a run's detach or checkout
    leaves it none, and its read, lines and link are then 404 `no_cart`)."""
    conversation = os.environ["FUZZ_CONVERSATION_ID"]
    case.path_parameters["conversation_id"] = conversation
    cart = fuzzkit.store_path(f"/conversations/{conversation}/cart")
    status, out = fuzzkit.api("POST", cart, {}, fuzzkit.owner())
    if status in (200, 201) and (out or {}).get("status") != "open":
        fuzzkit.api("DELETE", cart, None, fuzzkit.owner())
        fuzzkit.api("POST", cart, {}, fuzzkit.owner())
    fuzzkit.api("PUT", f"{cart}/items", {"items": [
        {"variant_id": os.environ["FUZZ_VARIANT_ID"], "quantity": 1}]}, fuzzkit.owner())


def new_product(case):
    """Each variant's SKU once: the variants are a set of whole objects, but two generated
    alike in their SKU alone are 422 ("appears twice")."""
    variants = case.body.get("variants") if isinstance(case.body, dict) else None
    seen = set()
    for i, variant in enumerate(variants or []):
        if isinstance(variant, dict) and isinstance(variant.get("sku"), str):
            if variant["sku"].strip() in seen:
                variant["sku"] = f"FUZZ-{RUN}-{next(MAIL_IDS)}-{i}"
            seen.add(variant["sku"].strip())


def member(case):
    """A member of their own to change or remove: invited (the answer carries the token) and
    accepted by a new account."""
    token = new_invite("member")
    if not token:
        return
    status, accepted = fuzzkit.api("POST", f"/invites/{token}/accept",
                                   {"password": "member member member"})
    if status == 200 and isinstance(accepted, dict) and "user" in accepted:
        case.path_parameters["user_id"] = accepted["user"]["id"]
        # Only an owner's own session gives the owner role (a store token: 403 by design).
        if (os.environ.get("FUZZ_RUN") == "admin-store-token" and isinstance(case.body, dict)
                and case.body.get("role") == "owner"):
            case.body["role"] = "admin"
        return True


def paused_workflow(case):
    """A paused workflow to resume (409 unless paused): the demo's, paused first (a run's
    resume or publish leaves it firing)."""
    workflow = os.environ["FUZZ_WORKFLOW_ID"]
    status, _ = fuzzkit.api("POST", fuzzkit.store_path(f"/workflows/{workflow}/pause"), {},
                            fuzzkit.owner())
    if status in (200, 409):  # 409: paused already (or not published, for a 409 here too)
        case.path_parameters["workflow_id"] = workflow
        return True


def new_invite(who):
    """A staff invite of the demo store for a new e-mail: its token (only the create's answer
    carries it), or None."""
    email = f"{who}-{RUN}-{next(MAIL_IDS)}@example.com"
    status, invite = fuzzkit.api("POST", fuzzkit.store_path("/invites"),
                                 {"email": email, "role": "staff"}, fuzzkit.owner())
    return invite["token"] if status == 201 else None


def invite_token(case):
    """An invite of its own to accept, for a new e-mail: the generated password makes that
    account."""
    token = new_invite("invited")
    if token:
        case.path_parameters["token"] = token
        return True


# What a phase reads or changes by an id it did not make (the examples phase's, an id seen
# in a list, one a link carried): the demo store's collections whose records
# `fresh_record` can make.
OWN_RECORD = re.compile(r"^/stores/\{store_id\}/(api-tokens|categories|channels|customers|pages"
                        r"|products|suppliers|webhooks|workflows)/\{[a-z_]+\}$")


def own_record(case):
    """A record of its own, in the demo store, for a phase's first read or change of each
    collection: the ids a phase has name records an earlier case may have deleted (a 404,
    rightly; a link may carry one too), and a short run may reach an operation only so."""
    if fresh_record(case):
        case.path_parameters["store_id"] = os.environ["FUZZ_STORE_ID"]
        # A change's unique fields (a slug, a SKU...) free ones: the example's are taken.
        if isinstance(case.body, dict):
            n = f"{RUN}-{next(MAIL_IDS)}"
            for key, form in UNIQUE.items():
                if isinstance(case.body.get(key), str):
                    case.body[key] = form.format(n=n)
        return True


def end_session_token(case):
    """The session-end run's own session (its cases' `Authorization`)."""
    return os.environ["FUZZ_END_ACCESS"]


def fresh_totp(token):
    """TOTP turned off and set up again on the session's account: (secret, code)."""
    password = os.environ["FUZZ_PASSWORD"]
    fuzzkit.api("DELETE", "/me/2fa/totp", {"password": password}, token)
    status, out = fuzzkit.api("GET", "/me/2fa/totp/setup", token=token)
    if status != 200:
        return None, None
    return out["secret"], fuzzkit.next_totp(out["secret"])


def totp_enable(case):
    secret, code = fresh_totp(end_session_token(case))
    if code:
        write_state("fuzz-totp-secret", secret)
        set_body(case, totp_code=code, password=os.environ["FUZZ_PASSWORD"])


def recovery_codes(case):
    """Recovery codes need a second factor on: TOTP, turned on here when it is off."""
    token = end_session_token(case)
    status, me = fuzzkit.api("GET", "/me", token=token)
    if status == 200 and not me["two_factor"]["totp"] and not me["two_factor"]["msgapp"]:
        secret, code = fresh_totp(token)
        if code and fuzzkit.api("POST", "/me/2fa/totp/enable",
                                {"totp_code": code, "password": os.environ["FUZZ_PASSWORD"]},
                                token)[0] == 204:
            write_state("fuzz-totp-secret", secret)


SESSION_END_PHONE = "+5511900000003"


def msgapp_confirm(case):
    token, phone = end_session_token(case), SESSION_END_PHONE
    password = os.environ["FUZZ_PASSWORD"]
    fuzzkit.api("DELETE", "/me/2fa/msgapp", {"password": password}, token)
    before = fuzzkit.latest_outbox_code(phone)
    status, _ = fuzzkit.api("POST", "/me/2fa/msgapp/enable",
                            {"phone_e164": phone, "password": password}, token)
    code = fuzzkit.outbox_code(phone, not_code=before) if status < 300 else None
    if code:
        set_body(case, code=code)
        return True
    return False


def hang_up(response, *args, **kwargs):
    """A `requests` response hook: a connection that switched protocols is a WebSocket now,
    never to be pooled for the next request (the server would read that as a frame)."""
    conn = getattr(response.raw, "connection", None) or getattr(response.raw, "_connection", None)
    if response.status_code == 101 and conn is not None:
        conn.close()
    return response


def upgrade(case, kwargs):
    """What a WebSocket client sends (RFC 6455 4.1), on a connection that is closed after."""
    for name, value in [("Connection", "Upgrade"), ("Upgrade", "websocket"),
                        ("Sec-WebSocket-Version", "13"),
                        ("Sec-WebSocket-Key", base64.b64encode(os.urandom(16)).decode())]:
        set_header(case, name, value)
    hooks = kwargs.setdefault("hooks", {})
    hooks["response"] = [*hooks.get("response", []), hang_up]


def agent_socket(case):
    """The team's socket on the demo store, opened with the run's bearer token (a generated
    ticket names none)."""
    if not isinstance(case.query, dict):
        case.query = {}
    case.query.pop("ticket", None)
    case.query["store_id"] = os.environ["FUZZ_STORE_ID"]


def widget_socket(case):
    """The shopper's socket on the widget conversation, from the chat's origin."""
    set_query(case, key=os.environ["FUZZ_CHAT_KEY"],
              conversation_id=os.environ["FUZZ_WIDGET_CONVERSATION_ID"],
              token=os.environ["FUZZ_VISITOR_TOKEN"])
    set_header(case, "Origin", os.environ["FUZZ_ORIGIN"])


SOCKETS = {("GET", "/ws/conversations"): agent_socket, ("GET", "/ws/widget"): widget_socket}


# (method, path) to what a positive case of it gets.
FIXTURES = {
    **{("DELETE", f"/stores/{{store_id}}/{kind}/{{{param}}}"): fresh_record
       for kind, param in [("api-tokens", "token_id"), ("channels", "channel_id"),
                           ("customers", "customer_id"), ("pages", "page_id"),
                           ("products", "product_id"), ("suppliers", "supplier_id"),
                           ("webhooks", "webhook_id"), ("workflows", "workflow_id"),
                           ("categories", "category_id")]},
    ("DELETE", "/stores/{store_id}/campaigns/{campaign_id}"): fresh_draft,
    ("POST", "/stores/{store_id}/campaigns/{campaign_id}/schedule"): fresh_draft,
    ("POST", "/auth/refresh"): owner_refresh,
    ("POST", "/stores/{store_id}/conversations/{conversation_id}/cart"): attach_cart,
    ("GET", "/stores/{store_id}/analytics/summary"): analytics_range,
    ("POST", "/stores/{store_id}/api-tokens"): token_in,
    ("PATCH", "/stores/{store_id}/conversations/{conversation_id}"): snooze,
    ("POST", "/invites/{token}/accept"): invite_token,
    ("POST", "/stores/{store_id}/workflows/{workflow_id}/resume"): paused_workflow,
    ("GET", "/stores/{store_id}/analytics/top-products"): analytics_range,
    ("POST", "/auth/2fa/totp/verify"): totp_verify,
    ("POST", "/auth/2fa/recovery/verify"): recovery_verify,
    ("POST", "/auth/otp/send"): otp_send,
    ("POST", "/auth/otp/verify"): otp_verify,
    ("POST", "/billing/pix/webhook"): pix_webhook,
    ("GET", "/tenants/{tenant_id}/invoices/{invoice_id}/pix.png"): pix_png,
    ("POST", "/tenants/{tenant_id}/subscription/pay"): subscription_pay,
    ("GET", "/stores/{store_id}/ads/feed.xml"): feed,
    ("GET", "/unsubscribe/{token}"): unsubscribe,
    ("POST", "/unsubscribe/{token}"): unsubscribe,
    ("GET", "/channels/msgapp/{channel_id}/webhook"): msgapp_handshake,
    ("POST", "/channels/msgapp/{channel_id}/webhook"): msgapp_webhook,
    ("POST", "/channels/email/{channel_id}/inbound"): email_inbound,
    ("GET", "/stores/{store_id}/conversations/{conversation_id}/messages/{message_id}"
            "/attachments/{index}"): attachment,
    ("GET", "/widget/{key}/conversations/{conversation_id}/messages"): widget,
    ("POST", "/widget/{key}/conversations/{conversation_id}/messages"): widget,
    ("POST", "/widget/{key}/conversations/{conversation_id}/read"): widget,
    ("POST", "/stores/{store_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/retry"):
        delivery_retry,
    ("DELETE", "/assistant/conversations/{conversation_id}"): assistant_conversation,
    ("DELETE", "/stores/{store_id}/assistant/conversations/{conversation_id}"):
        assistant_conversation,
    ("POST", "/stores/{store_id}/assistant/phones/verify"): phone_verify,
    ("POST", "/assistant/proposals/{proposal_id}/approve"): proposal,
    ("POST", "/assistant/proposals/{proposal_id}/decline"): proposal,
    ("POST", "/stores/{store_id}/assistant/proposals/{proposal_id}/approve"): proposal,
    ("POST", "/stores/{store_id}/assistant/proposals/{proposal_id}/decline"): proposal,
    ("DELETE", "/stores/{store_id}/webhooks/{webhook_id}/events/{event}"): unsubscribe_event,
    ("DELETE", "/webhook-events"): unsubscribe_event,
    ("POST", "/stores/{store_id}/orders/{order_id}/refund"): refund,
    ("POST", "/stores/{store_id}/products"): new_product,
    ("PATCH", "/stores/{store_id}/members/{user_id}"): member,
    ("DELETE", "/stores/{store_id}/members/{user_id}"): member,
    **{(method, f"/stores/{{store_id}}/conversations/{{conversation_id}}/cart{rest}"):
       conversation_cart
       for method, rest in [("GET", ""), ("PUT", "/items"), ("POST", "/send")]},
    ("POST", "/stores/{store_id}/purchase-orders/{purchase_order_id}/receive"): receive,
    ("PATCH", "/stores/{store_id}/products/{product_id}"): patch_product,
    ("PATCH", "/stores/{store_id}/channels/{channel_id}"): patch_channel,
    ("PATCH", "/stores/{store_id}/campaigns/{campaign_id}"): draft_campaign,
    ("POST", "/stores/{store_id}/campaigns/{campaign_id}/send-test"): draft_campaign,
    ("POST", "/me/2fa/totp/enable"): totp_enable,
    ("POST", "/me/2fa/recovery-codes"): recovery_codes,
    ("POST", "/me/2fa/msgapp/confirm"): msgapp_confirm,
}
# Fixtures for the first positive case of each phase only (see FILLED).
RATIONED = {recovery_verify, otp_send, otp_verify, phone_verify, refund, receive, msgapp_confirm,
            fresh_record, proposal, assistant_conversation, member, totp_verify, fresh_draft,
            owner_refresh, attach_cart, invite_token, own_record, paused_workflow}


def chain_graph(graph):
    """A generated graph's nodes joined as a client's editor joins them: one path through
    them in order, each condition's two branches to the next step, and the ends last (one
    kept: a second would have no way in). Generated edges rarely name the generated nodes,
    and the rules they break (a start, reachability, a condition's two branches) are the
    Graph's description, which no schema can state."""
    nodes = graph.get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
        return
    seen, kept = set(), []
    for node in nodes:
        if not isinstance(node.get("id"), str) or node["id"] in seen:
            continue
        seen.add(node["id"])
        kept.append(node)
    steps = [n for n in kept if n.get("type") != "end"]
    ends = [n for n in kept if n.get("type") == "end"][:1]
    if not steps and not ends:
        return
    if not ends and any(n.get("type") == "condition" for n in steps[-1:]):
        # A last condition's branches go here (within the 200 nodes a graph may have).
        steps, ends = steps[:199], [{"id": "fuzz-end", "type": "end"}]
    order = steps + ends
    edges = []
    for here, there in zip(order, order[1:]):
        if here.get("type") == "condition":
            edges += [{"from": here["id"], "to": there["id"], "branch": b}
                      for b in ("true", "false")]
        else:
            edges.append({"from": here["id"], "to": there["id"]})
    graph["nodes"], graph["edges"] = order, edges


# A workflow run's subject is an order or a customer of the store: the demo's of its type.
SUBJECTS = {"order": "FUZZ_ORDER_ID", "customer": "FUZZ_CUSTOMER_ID"}
KEY_SUFFIXES = itertools.count()
RUN = uuid.uuid4().hex[:12]


def own_key(key):
    """`key` made unique in this run, still 1 to 255 printable characters without spaces."""
    suffix = f"-{RUN}-{next(KEY_SUFFIXES)}"
    return key[:255 - len(suffix)] + suffix


@schemathesis.hook
def before_call(context, case, kwargs):
    meta = case.meta
    positive = meta is not None and meta.generation.mode == GenerationMode.POSITIVE
    headers = case.headers or {}
    for name in [n for n in headers if n.lower() == "idempotency-key"]:
        if positive and isinstance(headers[name], str):
            headers[name] = own_key(headers[name])
    if (isinstance(case.body, dict) and meta is not None
            and meta.phase.name in (TestPhase.EXAMPLES, TestPhase.COVERAGE)
            and meta.generation.mode == GenerationMode.POSITIVE):
        for key, value in values_for(case).items():
            fill(case.body, key, value)
    params = case.path_parameters or {}
    if (positive and "cart_id" in params and os.environ.get("FUZZ_CART_ID")
            and meta.phase.name in (TestPhase.EXAMPLES, TestPhase.COVERAGE, TestPhase.FUZZING)):
        # A checkout, a line's removal and a recovery each use their cart up (or its token):
        # each gets a fresh one; the other calls share FUZZ_CART.
        method, path = case.method.upper(), case.path
        # An add, first in each scenario: the shared cart's line fills up over a run (10,000
        # units a line), and then every add is a right 422.
        adds = method == "POST" and path.endswith("/items") and first_in_phase(case)
        if (path.endswith(("/checkout", "/recover"))
                or (method == "DELETE" and "/items/" in path) or adds):
            cart, token = fuzzkit.open_cart(os.environ["FUZZ_SF_VARIANT_ID"])
            if adds:
                filled(case)
        else:
            cart, token = os.environ["FUZZ_CART_ID"], os.environ["FUZZ_CART_TOKEN"]
        params["cart_id"] = cart
        if path.endswith("/recover"):
            set_query(case, **fuzzkit.recovery_query(cart, int(time.time()) + 3600))
        else:
            set_header(case, "X-Cart-Token", token)
    if positive and isinstance(case.query, dict):
        case.query.pop("cursor", None)
        # A message list's `after`/`before` name a message of the conversation (and not both
        # at once): generated ids name none.
        if case.path.endswith("/messages"):
            case.query.pop("after", None)
            case.query.pop("before", None)
    # The configuration names the demo's variant in every line of an order, a cart or a
    # purchase order: a positive case keeps one line of it (a variant twice is 422, "send
    # one item with the total", "appears twice").
    items = case.body.get("items") if isinstance(case.body, dict) else None
    if positive and isinstance(items, list) and len(items) > 1 and case.path.endswith(
            ("/orders", "/orders/manual", "/cart/items", "/purchase-orders",
             "/purchase-orders/{purchase_order_id}")):
        del items[1:]
    graph = case.body.get("graph") if isinstance(case.body, dict) else None
    if positive and isinstance(graph, dict) and "/workflows" in case.path:
        chain_graph(graph)
    subject = case.body.get("subject") if isinstance(case.body, dict) else None
    if positive and isinstance(subject, dict) and subject.get("type") in SUBJECTS:
        subject["id"] = os.environ.get(SUBJECTS[subject["type"]], subject.get("id"))
    spare = os.environ.get("FUZZ_SPARE_SESSION_ID")
    params = case.path_parameters or {}
    if spare and case.method.upper() == "DELETE" and params.get("session_id") == spare:
        params["session_id"] = new_session()
    # Last, so what a fixture signs is the body as sent.
    fixture = FIXTURES.get((case.method.upper(), case.path))
    if fixture is None and case.method.upper() in ("GET", "PATCH") and OWN_RECORD.match(case.path):
        fixture = own_record
    if positive and fixture in RATIONED:
        # What is scarce or slow to get: the first positive case of each phase gets it (a
        # fixture answers whether it did; until one does, the next case tries again).
        if first_in_phase(case) and fixture(case):
            filled(case)
    elif positive and fixture:
        fixture(case)
    socket = SOCKETS.get((case.method.upper(), case.path))
    if positive and socket:
        socket(case)
        upgrade(case, kwargs)
