"""What .ci/openapi-check and its schemathesis hooks (.ci/openapi-hooks.py) share to hand the
generated requests real data: calls to the server under test, the second factors a client
would read from an authenticator app or a phone, and the signed links the server mails.

`python3 .ci/fuzzkit.py setup` makes the records no operation of the documents creates in a
usable state (a failed webhook delivery, an e-mail with a file, channels with known
secrets, a widget conversation, an account with both second factors, organizations with
an invoice to pay) and prints them as shell `export` lines; `... storefront` makes the
storefront run's product and cart. Standard library only: it runs under the system python3 and the
venv's alike.

Environment: FUZZ_BASE (the server), FUZZ_ACCESS (a session of the demo's owner),
FUZZ_STORE_ID, FUZZ_CHAT_KEY, FUZZ_ORIGIN, FUZZ_DATA_DIR (for the `log` messaging-app
provider's outbox and the server's hmac.key), FUZZ_BIN (the merchant-admin binary),
FUZZ_STATE (a directory for what the runs use up: TOTP steps, recovery codes)."""
import base64
import hashlib
import hmac
import json
import os
import re
import shlex
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request


def env(name):
    return os.environ[name]


def api(method, path, body=None, token=None, headers=None, raw=False):
    """(status, parsed JSON or text) of one call to the server under test."""
    data = None
    h = dict(headers or {})
    if body is not None:
        data = json.dumps(body).encode()
        h.setdefault("content-type", "application/json")
    if token:
        h["authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"{env('FUZZ_BASE')}/v1{path}", data=data, headers=h,
                                     method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, text = response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode("utf-8", "replace")
    if raw:
        return status, text
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text


def must(method, path, body=None, token=None, headers=None):
    status, out = api(method, path, body, token, headers)
    if status >= 300:
        raise RuntimeError(f"{method} {path}: {status} {out}")
    return out


def owner():
    return env("FUZZ_ACCESS")


def store_path(rest=""):
    return f"/stores/{env('FUZZ_STORE_ID')}{rest}"


# --- Second factors -------------------------------------------------------------------------

def totp_at(secret_b32, step):
    """RFC 6238 with the server's parameters: SHA-1, six digits, 30 s steps."""
    key = base64.b32decode(secret_b32.upper() + "=" * (-len(secret_b32) % 8))
    digest = hmac.new(key, struct.pack(">Q", step), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    value = struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF
    return f"{value % 1_000_000:06d}"


def state_file(name):
    directory = os.environ.get("FUZZ_STATE") or "/tmp"
    return os.path.join(directory, name)


def next_totp(secret_b32):
    """A code the server takes now and has not seen: it accepts the steps either side of
    the current one, each once, so three codes a window (the steps used are kept in
    FUZZ_STATE, across the runs' processes)."""
    path = state_file(f"totp-{hashlib.sha256(secret_b32.encode()).hexdigest()[:12]}")
    try:
        with open(path) as f:
            last = int(f.read().strip() or 0)
    except FileNotFoundError:
        last = 0
    clock = time.time()
    now = int(clock) // 30
    # The step before is taken only early in this one: near its end the server may read the
    # code a step later, when that step is no longer accepted.
    steps = (now - 1, now, now + 1) if clock % 30 < 20 else (now, now + 1)
    for step in steps:
        if step > last:
            with open(path, "w") as f:
                f.write(str(step))
            return totp_at(secret_b32, step)
    return None


def take_recovery_code():
    """One of the 2FA account's recovery codes not used yet (each works once)."""
    path = state_file("recovery-codes-used")
    used = set(open(path).read().split()) if os.path.exists(path) else set()
    for code in os.environ.get("FUZZ_TWOFA_RECOVERY_CODES", "").split(","):
        if code and code not in used:
            with open(path, "a") as f:
                f.write(code + "\n")
            return code
    return None


def outbox_code(recipient, not_code=None, wait=5.0):
    """The newest six-digit code the `log` messaging-app provider recorded for `recipient`
    (read with `merchant-admin dev outbox`, as a developer would)."""
    deadline = time.time() + wait
    while True:
        run = subprocess.run([env("FUZZ_BIN"), "dev", "outbox", "--data-dir", env("FUZZ_DATA_DIR"),
                              "--limit", "20"], capture_output=True, text=True, check=False,
                             timeout=20)
        if run.returncode != 0:
            print(f"dev outbox failed: {run.stderr.strip()}", file=sys.stderr)
        out = run.stdout
        for line in out.splitlines():
            if f" to {recipient} " in line:
                found = re.search(r"\b(\d{6})\b", line.split("): ", 1)[-1])
                if found and found.group(1) != not_code:
                    return found.group(1)
                break
        if time.time() > deadline:
            return None
        time.sleep(0.2)


def latest_outbox_code(recipient):
    """The code recorded last for `recipient` before a new send, so the wait above skips it."""
    return outbox_code(recipient, wait=0)


def challenge(email, password):
    """A fresh sign-in challenge of an account with a second factor."""
    status, out = api("POST", "/auth/login", {"email": email, "password": password})
    if status == 200 and isinstance(out, dict) and out.get("status") == "two_factor_required":
        return out["challenge"]
    return None


def twofa_challenge():
    return challenge(env("FUZZ_TWOFA_EMAIL"), env("FUZZ_TWOFA_PASSWORD"))


TOTP_PASSWORD = "totp totp totp totp"


def totp_sign_in():
    """(challenge, code) of a sign-in through an authenticator app, or None: the first of
    the accounts with TOTP whose next code is free (each secret gives one a 30 s step, so
    the runs' sign-ins take turns among them rather than wait for a step)."""
    accounts = [(env("FUZZ_TWOFA_EMAIL"), env("FUZZ_TWOFA_PASSWORD"),
                 env("FUZZ_TWOFA_TOTP_SECRET"))]
    accounts += [(email, TOTP_PASSWORD, secret) for email, secret in
                 (a.split(":") for a in os.environ.get("FUZZ_TOTP_ACCOUNTS", "").split(",") if a)]
    for email, password, secret in accounts:
        code = next_totp(secret)
        token = code and challenge(email, password)
        if token:
            return token, code
    return None


def send_otp(challenge_token, phone):
    """Sends a sign-in code for `challenge_token` and reads it from the outbox."""
    before = latest_outbox_code(phone)
    status, _ = api("POST", "/auth/otp/send", {"challenge": challenge_token})
    return outbox_code(phone, not_code=before) if status < 300 else None


# --- Signed links ----------------------------------------------------------------------------

def hmac_key():
    """The server's `hmac` key: the second half of hmac.key (src/db/keys.rs)."""
    with open(os.path.join(env("FUZZ_DATA_DIR"), "hmac.key"), "rb") as f:
        return f.read()[32:64]


def b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def uuid_bytes(u):
    return bytes.fromhex(u.replace("-", ""))


def unsubscribe_token(store_id, customer_id):
    """The token of a campaign mail's unsubscribe link (src/marketing/unsubscribe.rs)."""
    sig = hmac.new(hmac_key(), f"unsubscribe:{store_id}:{customer_id}".encode(),
                   hashlib.sha256).digest()
    return b64url(uuid_bytes(store_id) + uuid_bytes(customer_id) + sig)


def recovery_query(cart_id, expires):
    """`expires` and `signature` of a cart's recovery link (src/carts/recovery.rs)."""
    sig = hmac.new(hmac_key(), f"cart-recovery:{cart_id}:{expires}".encode(),
                   hashlib.sha256).digest()
    return {"expires": expires, "signature": b64url(sig)}


# --- Storefront carts ------------------------------------------------------------------------

def open_cart(variant_id):
    """A storefront cart with one line of `variant_id` and a contact: (id, token)."""
    key, origin = env("FUZZ_CHAT_KEY"), {"Origin": env("FUZZ_ORIGIN")}
    cart = must("POST", f"/storefront-api/{key}/carts", {}, headers=origin)
    token = {**origin, "X-Cart-Token": cart["token"]}
    must("POST", f"/storefront-api/{key}/carts/{cart['id']}/items",
         {"variant_id": variant_id, "quantity": 1}, headers=token)
    must("PUT", f"/storefront-api/{key}/carts/{cart['id']}/customer",
         {"email": "shopper@example.com"}, headers=token)
    return cart["id"], cart["token"]


# --- Orders ----------------------------------------------------------------------------------

def paid_order():
    """A new order of the demo's customer and variant, marked paid: its id, or None."""
    status, order = api("POST", store_path("/orders/manual"), {
        "customer_id": env("FUZZ_CUSTOMER_ID"),
        "items": [{"variant_id": env("FUZZ_VARIANT_ID"), "quantity": 1,
                   "unit_price_cents": 100000}]}, owner())
    if status != 201:
        return None
    status, _ = api("PATCH", store_path(f"/orders/{order['id']}"), {"status": "paid"}, owner())
    return order["id"] if status == 200 else None


def ordered_purchase_order():
    """A new purchase order of the demo's supplier, placed: (id, its line's variant), or
    (None, None)."""
    variant = env("FUZZ_VARIANT_ID")
    status, po = api("POST", store_path("/purchase-orders"), {
        "supplier_id": env("FUZZ_SUPPLIER_ID"),
        "items": [{"variant_id": variant, "quantity": 1000, "unit_cost_cents": 100}]}, owner())
    if status != 201:
        return None, None
    status, _ = api("POST", store_path(f"/purchase-orders/{po['id']}/order"), {}, owner())
    return (po["id"], variant) if status == 200 else (None, None)


# --- Setup -----------------------------------------------------------------------------------

EMAIL_SECRET = "fuzz-inbound-secret"
APP_SECRET = "fuzz-app-secret"
VERIFY_TOKEN = "fuzz-verify-token"
PHONE_NUMBER_ID = "1234567890"
TWOFA_PHONE = "+5511900000001"


def email_channel_settings():
    return {"address": "support@fuzz.example.com", "inbound_secret": EMAIL_SECRET}


def msgapp_channel_settings():
    return {"phone_number_id": PHONE_NUMBER_ID, "app_secret": APP_SECRET,
            "verify_token": VERIFY_TOKEN}


def totp_account(email, password):
    """A new account with TOTP turned on: (a session of it, the TOTP secret)."""
    must("POST", "/auth/register", {"email": email, "password": password})
    session = must("POST", "/auth/login", {"email": email, "password": password})["token"]
    secret = must("GET", "/me/2fa/totp/setup", token=session)["secret"]
    must("POST", "/me/2fa/totp/enable", {"totp_code": next_totp(secret)}, session)
    return session, secret


def setup():
    out = {}
    key, origin = env("FUZZ_CHAT_KEY"), {"Origin": env("FUZZ_ORIGIN")}

    # A webhook whose delivery failed, to re-send: its first attempt finds nothing listening,
    # and with the endpoint turned off the next one is refused, which ends the delivery.
    hook = must("POST", store_path("/webhooks"),
                {"url": "http://127.0.0.1:9/fuzz", "events": ["customers.created"]}, owner())
    must("POST", store_path(f"/webhooks/{hook['id']}/test"), {}, owner())
    deliveries = f"/webhooks/{hook['id']}/deliveries"
    for _ in range(100):
        if must("GET", store_path(deliveries), token=owner())["data"]:
            break
        time.sleep(0.1)
    must("PUT", store_path(f"/webhooks/{hook['id']}"), {"is_active": False}, owner())
    failed = None
    for _ in range(300):
        failed = next((a for a in must("GET", store_path(deliveries), token=owner())["data"]
                       if a["status"] == "failed"), None)
        if failed:
            break
        time.sleep(0.1)
    if not failed:
        raise RuntimeError("the fuzz webhook's delivery did not fail")
    must("PUT", store_path(f"/webhooks/{hook['id']}"), {"is_active": True}, owner())
    out["FUZZ_WEBHOOK_ID"], out["FUZZ_DELIVERY_ID"] = hook["id"], failed["id"]
    # A turned-off webhook for event unsubscribes: what the runs subscribe it to is never sent.
    out["FUZZ_EVENTS_WEBHOOK_ID"] = must("POST", store_path("/webhooks"), {
        "url": "http://127.0.0.1:9/events", "is_active": False}, owner())["id"]

    # Channels whose secrets the hooks know: mail in with a file, the messaging app.
    mail = must("POST", store_path("/channels"),
                {"kind": "email", "name": "Fuzz mail", "settings": email_channel_settings()},
                owner())
    received = must("POST", f"/channels/email/{mail['id']}/inbound", {
        "from": "Ana <ana@example.com>", "to": "support@fuzz.example.com",
        "subject": "A file", "text": "Here it is.", "message_id": "<fuzz-1@example.com>",
        "attachments": [{"content_type": "text/plain", "filename": "note.txt",
                         "content": base64.b64encode(b"hello").decode()}]},
        headers={"X-Inbound-Secret": EMAIL_SECRET})
    messages = must("GET", store_path(f"/conversations/{received['conversation_id']}/messages"),
                    token=owner())["data"]
    with_file = next(m for m in messages if m.get("attachments"))
    out["FUZZ_EMAIL_CHANNEL_ID"] = mail["id"]
    out["FUZZ_ATTACHMENT_CONVERSATION_ID"] = received["conversation_id"]
    out["FUZZ_ATTACHMENT_MESSAGE_ID"] = with_file["id"]
    out["FUZZ_ATTACHMENT_INDEX"] = str(with_file["attachments"][0]["index"])
    app = must("POST", store_path("/channels"),
               {"kind": "msgapp", "name": "Fuzz app", "settings": msgapp_channel_settings()},
               owner())
    out["FUZZ_MSGAPP_CHANNEL_ID"] = app["id"]

    # Stock for the demo's variant, which the runs' orders name (and reserve).
    must("POST", store_path(f"/inventory/{env('FUZZ_VARIANT_ID')}/adjustments"),
         {"delta": 1000000, "reason": "fuzz"}, owner())

    # A cart, for the admin document's cart reads (the storefront run opens its own).
    out["FUZZ_CART_ID"], out["FUZZ_CART_TOKEN"] = open_cart(env("FUZZ_VARIANT_ID"))

    # A shopper's conversation on the widget, with its visitor token.
    visitor = must("POST", f"/widget/{key}/conversations", {"name": "Shopper"}, headers=origin)
    out["FUZZ_WIDGET_CONVERSATION_ID"] = visitor["conversation_id"]
    out["FUZZ_VISITOR_TOKEN"] = visitor["visitor_token"]

    # An account with both second factors, to finish sign-ins with.
    email, password = "twofa@example.com", "twofa twofa twofa"
    session, secret = totp_account(email, password)
    codes = must("POST", "/me/2fa/recovery-codes", {"password": password}, session)["codes"]
    must("POST", "/me/2fa/msgapp/enable", {"phone_e164": TWOFA_PHONE, "password": password},
         session)
    code = outbox_code(TWOFA_PHONE)
    must("POST", "/me/2fa/msgapp/confirm", {"code": code}, session)
    out.update(FUZZ_TWOFA_EMAIL=email, FUZZ_TWOFA_PASSWORD=password,
               FUZZ_TWOFA_TOTP_SECRET=secret, FUZZ_TWOFA_PHONE=TWOFA_PHONE,
               FUZZ_TWOFA_RECOVERY_CODES=",".join(codes))

    # Accounts with TOTP alone, to take turns with the one above (see totp_sign_in).
    pool = []
    for n in range(1, 4):
        email = f"totp{n}@example.com"
        pool.append(f"{email}:{totp_account(email, TOTP_PASSWORD)[1]}")
    out["FUZZ_TOTP_ACCOUNTS"] = ",".join(pool)

    # Organizations whose first invoice a signed Pix payment settles, one per phase that
    # sends one (the demo's own stays open for the runs' pay and pix.png).
    out["FUZZ_PIX_TENANTS"] = ",".join(
        must("POST", "/tenants", {"name": f"Pix {n}"}, owner())["id"] for n in range(1, 7))
    print_exports(out)


def print_exports(values):
    for name, value in values.items():
        print(f"export {name}={shlex.quote(value)}")


def storefront():
    """Right before the storefront run, so no admin run's change can take them away: a
    product of its own with stock, a published page, and a cart with a line of the product
    and a contact."""
    product = must("POST", store_path("/products"), {
        "title": "Fuzz storefront", "status": "active",
        "variants": [{"sku": "FUZZ-STOREFRONT", "price_cents": 1990, "on_hand": 100000}]},
        owner())
    variant = product["variants"][0]["id"]
    # A slug of its own: the admin runs' pages may have taken any plain one.
    page = must("POST", store_path("/pages"), {
        "title": "Fuzz storefront", "slug": f"fuzz-storefront-{os.getpid()}-{int(time.time())}",
        "body_markdown": "Hello", "status": "published"}, owner())
    cart, token = open_cart(variant)
    print_exports({"FUZZ_SF_VARIANT_ID": variant, "FUZZ_SF_PRODUCT_ID": product["id"],
                   "FUZZ_SF_PAGE_SLUG": page["slug"], "FUZZ_CART_ID": cart,
                   "FUZZ_CART_TOKEN": token})


if __name__ == "__main__" and sys.argv[1:] == ["setup"]:
    setup()
elif __name__ == "__main__" and sys.argv[1:] == ["storefront"]:
    storefront()
