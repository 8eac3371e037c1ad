"""Every example in an OpenAPI document matches its schema (issue 21).

Usage: python openapi-examples.py DOC.json [...]. Checks the `example` of every request body
and response media type against the media type's schema (JSON Schema 2020-12, as OpenAPI
3.1 says), with jsonschema_rs, which schemathesis brings. Prints each mismatch; exits 1 if
there is one, or if a JSON body has no example.
"""
import json
import sys

import jsonschema_rs


def media_types(doc):
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            body = op.get("requestBody", {}).get("content", {}).get("application/json")
            if body is not None:
                yield f"{method.upper()} {path} request", body
            for status, response in op["responses"].items():
                media = response.get("content", {}).get("application/json")
                if media is not None:
                    yield f"{method.upper()} {path} {status}", media


def main():
    bad = 0
    for name in sys.argv[1:]:
        with open(name) as f:
            doc = json.load(f)
        checked = 0
        for where, media in media_types(doc):
            if "example" not in media:
                print(f"{name}: {where}: no example")
                bad += 1
                continue
            schema = dict(media["schema"])
            schema["components"] = doc.get("components", {})
            errors = list(jsonschema_rs.validator_for(schema).iter_errors(media["example"]))
            checked += 1
            for e in errors[:3]:
                print(f"{name}: {where}: {e.message} at {list(e.instance_path)}")
            bad += bool(errors)
        print(f"{name}: {checked} examples checked")
    sys.exit(1 if bad else 0)


main()
