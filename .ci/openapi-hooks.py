"""Schemathesis hooks for .ci/openapi-check (SCHEMATHESIS_HOOKS; FUZZ_CONFIG names the run's
configuration under .ci/schemathesis/).

1. The body values a run's configuration gives (`"body.customer_id" = ...`: the demo's ids,
   the account's password) reach the generated bodies of the fuzzing phase only; the
   examples and coverage phases send the document's examples and boundary values, whose ids
   name nothing. Their positive cases get the same values here, for the fields they send,
   so a body meant to be valid is valid; negative cases are left as generated.
2. `DELETE /me/sessions/{session_id}` signs a device out, once, and `POST /me/password`
   signs out every other device: a case that names the account's other device (the id the
   session-end configuration passes) gets a device signed in just for it."""
import json
import os
import tomllib
import urllib.request

import schemathesis
from schemathesis.generation.meta import TestPhase
from schemathesis.generation.modes import GenerationMode


def body_values():
    """`field` (or `list[*].field`) to value, from the configuration's `body.` parameters."""
    path = os.environ.get("FUZZ_CONFIG")
    if not path:
        return {}
    with open(path, "rb") as f:
        parameters = tomllib.load(f).get("parameters") or {}
    return {k[len("body."):]: os.path.expandvars(v) if isinstance(v, str) else v
            for k, v in parameters.items() if k.startswith("body.")}


BODY = body_values()


def fill(body, key, value):
    if "[*]." in key:
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


@schemathesis.hook
def before_call(context, case, kwargs):
    meta = case.meta
    if (BODY and isinstance(case.body, dict) and meta is not None
            and meta.phase.name in (TestPhase.EXAMPLES, TestPhase.COVERAGE)
            and meta.generation.mode == GenerationMode.POSITIVE):
        for key, value in BODY.items():
            fill(case.body, key, value)
    spare = os.environ.get("FUZZ_SPARE_SESSION_ID")
    params = case.path_parameters or {}
    if spare and case.method.upper() == "DELETE" and params.get("session_id") == spare:
        params["session_id"] = new_session()
