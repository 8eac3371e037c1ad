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
   sends none rather than a generated one, which no page gave. Negative cases keep theirs."""
import json
import os
import re
import itertools
import tomllib
import urllib.request
import uuid

import schemathesis
from schemathesis.generation.meta import TestPhase
from schemathesis.generation.modes import GenerationMode


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
    body = json.dumps({"email": os.environ["FUZZ_EMAIL"], "password": os.environ["FUZZ_PASSWORD"]})
    request = urllib.request.Request(
        f"{os.environ['FUZZ_BASE']}/v1/auth/login", data=body.encode(),
        headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["session_id"]


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
    which = "FUZZ_CHECKOUT_CART" if case.path.endswith("/checkout") else "FUZZ_CART"
    cart = os.environ.get(f"{which}_ID")
    params = case.path_parameters or {}
    if (cart and positive and "cart_id" in params
            and meta.phase.name in (TestPhase.EXAMPLES, TestPhase.COVERAGE, TestPhase.FUZZING)):
        params["cart_id"] = cart
        if case.headers is None:
            case.headers = {}
        for name in [n for n in case.headers if n.lower() == "x-cart-token"]:
            del case.headers[name]
        case.headers["X-Cart-Token"] = os.environ[f"{which}_TOKEN"]
    if positive and isinstance(case.query, dict):
        case.query.pop("cursor", None)
    subject = case.body.get("subject") if isinstance(case.body, dict) else None
    if positive and isinstance(subject, dict) and subject.get("type") in SUBJECTS:
        subject["id"] = os.environ.get(SUBJECTS[subject["type"]], subject.get("id"))
    spare = os.environ.get("FUZZ_SPARE_SESSION_ID")
    params = case.path_parameters or {}
    if spare and case.method.upper() == "DELETE" and params.get("session_id") == spare:
        params["session_id"] = new_session()
