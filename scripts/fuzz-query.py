#!/usr/bin/env python3
"""Query-string fuzzing that schemathesis does not do: every query parameter of every GET
operation in the service's OpenAPI document, with values out of any range the parameter could
hold (signed and five-digit years, impossible dates, numbers beyond 64 bits, empty, very long,
control characters), one at a time and all together, plus parameters the operation does not know.

Every answer must be below 500, and a 4xx must be application/problem+json. Prints the number of
requests and the failures; exits 1 on any failure.

    scripts/fuzz-query.py http://127.0.0.1:18080 <admin token>
"""

import json
import sys
import urllib.error
import urllib.parse
import urllib.request

HOSTILE = [
    "-5000-01-01", "0000-01-01", "+262142-01-01", "262143-01-01", "10000-01-01", "2026-1-01",
    "2026-02-30", "2026-13-01", "2026-00-10", "1970-01-01T00:00:00Z", "2026-03", "-1", "0",
    "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1e309", "NaN",
    "", " ", "%00", "\x00", "\u202e", "a" * 5000, "[]", "{}", "null", "true", "'", "\"",
    "1;select pg_sleep(1)", "../../etc/passwd",
]


def request(base, token, path, params):
    query = urllib.parse.urlencode(params, doseq=True)
    url = f"{base}{path}?{query}" if query else f"{base}{path}"
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.headers.get("content-type", "")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("content-type", "")


def operations(document):
    for path, item in document["paths"].items():
        get = item.get("get")
        if not get:
            continue
        params = [p for p in get.get("parameters", []) if p["in"] == "query"]
        # Path parameters get a plausible id: the query string is what is fuzzed here.
        concrete = path
        for p in get.get("parameters", []):
            if p["in"] == "path":
                concrete = concrete.replace("{" + p["name"] + "}", "settle-fines" if p["name"] == "name" else "1")
        yield concrete, [p["name"] for p in params]


def main():
    base, token = sys.argv[1], sys.argv[2]
    with urllib.request.urlopen(f"{base}/api-docs/openapi.json", timeout=30) as response:
        document = json.load(response)
    sent, failures = 0, []
    for path, names in operations(document):
        cases = [{name: value} for name in names for value in HOSTILE]
        cases += [{name: value for name in names} for value in HOSTILE] if names else []
        cases += [{"unknown": "1"}, {"member_id[]": "1"}, {(names[0] if names else "x") + "[]": "1"}]
        for params in cases:
            status, content_type = request(base, token, path, params)
            sent += 1
            if status >= 500 or (400 <= status < 500 and content_type != "application/problem+json"):
                failures.append(f"{status} {content_type!r} GET {path} {params!r}"[:300])
    print(f"fuzz-query: {sent} requests sent, {len(failures)} failures")
    for failure in failures[:20]:
        print(f"  {failure}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
