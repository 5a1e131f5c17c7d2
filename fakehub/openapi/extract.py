"""Regenerate `github_subset.json`: the response schemas of the routes fakehub serves.

GitHub's OpenAPI description (npm `@octokit/openapi`, MIT, from github/rest-api-description) is
13 MB; the tests need only the success bodies of a few operations. This script fetches the package
with `npm pack` (or reads a tarball given with `--tarball`), follows the `$ref` closure of those
responses, rewrites OpenAPI 3.0 `nullable` into JSON Schema so plain `jsonschema` can validate,
and writes a small JSON file next to itself.

    python -m fakehub.openapi.extract [--tarball octokit-openapi-23.0.2.tgz]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

PACKAGE = "@octokit/openapi@23.0.2"
MEMBER = "package/generated/api.github.com.json"
OUT = Path(__file__).with_name("github_subset.json")

# operationId -> success status whose JSON body fakehub emits.
OPERATIONS: dict[str, str] = {
    "repos/get": "200",
    "actions/list-repo-workflows": "200",
    "actions/get-workflow": "200",
    "actions/list-workflow-runs": "200",
    "actions/list-workflow-runs-for-repo": "200",
    "actions/get-workflow-run": "200",
    "actions/get-workflow-run-attempt": "200",
    "actions/list-jobs-for-workflow-run": "200",
    "actions/list-jobs-for-workflow-run-attempt": "200",
    "actions/get-job-for-workflow-run": "200",
    "rate-limit/get": "200",
    "issues/create": "201",
    "issues/get": "200",
    "issues/update": "200",
    "issues/list-for-repo": "200",
    "issues/list-events": "200",
    "issues/create-label": "201",
    "issues/get-label": "200",
    "issues/add-labels": "200",
    "issues/list-comments": "200",
    "issues/create-comment": "201",
    "issues/get-comment": "200",
    "issues/update-comment": "200",
    "checks/get": "200",
    "checks/list-annotations": "200",
    "users/get-authenticated": "200",
}
# Error bodies, and the one event kind fakehub records (list-events' items are an anyOf of all)
EXTRA_SCHEMAS = ("basic-error", "validation-error", "state-change-issue-event")


def load_spec(tarball: Path | None) -> dict[str, Any]:
    """Read the OpenAPI description from the npm tarball, fetching it when none is given."""
    if tarball is None:
        tmp = Path(tempfile.mkdtemp(prefix="octokit-openapi-"))
        name = subprocess.run(
            ["npm", "pack", PACKAGE, "--silent"],
            cwd=tmp,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        tarball = tmp / name.splitlines()[-1]
    with tarfile.open(tarball) as tar:
        member = tar.extractfile(MEMBER)
        assert member is not None, MEMBER
        return json.load(member)


def to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0 -> JSON Schema: `nullable`, local refs, and no examples or descriptions."""
    if isinstance(node, list):
        return [to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {
        key: to_json_schema(value)
        for key, value in node.items()
        if key not in ("example", "examples", "description", "x-github", "externalDocs")
    }
    if "$ref" in out:
        out["$ref"] = out["$ref"].replace("#/components/schemas/", "#/$defs/")
    if out.pop("nullable", False):
        if "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def schema_refs(node: Any) -> set[str]:
    """Names of the component schemas a node refers to directly."""
    if isinstance(node, list):
        return set().union(*(schema_refs(item) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found = {node["$ref"].rsplit("/", 1)[1]} if "$ref" in node else set()
    return found.union(*(schema_refs(value) for value in node.values()))


def resolve(spec: dict[str, Any], node: dict[str, Any], section: str) -> dict[str, Any]:
    """Follow a `#/components/<section>/<name>` reference, if the node is one."""
    ref = node.get("$ref")
    return spec["components"][section][ref.rsplit("/", 1)[1]] if ref else node


def extract(spec: dict[str, Any]) -> dict[str, Any]:
    """The subset: one schema per operation plus the closure of component schemas."""
    operations: dict[str, Any] = {}
    for path, item in spec["paths"].items():
        for method, op in item.items():
            status = OPERATIONS.get(op.get("operationId", "")) if isinstance(op, dict) else None
            if status is None:
                continue
            response = resolve(spec, op["responses"][status], "responses")
            schema = response["content"]["application/json"]["schema"]
            operations[op["operationId"]] = {
                "method": method.upper(),
                "path": path,
                "status": int(status),
                "schema": to_json_schema(schema),
            }
    missing = set(OPERATIONS) - set(operations)
    assert not missing, missing
    pending = set(EXTRA_SCHEMAS).union(*(schema_refs(op["schema"]) for op in operations.values()))
    defs: dict[str, Any] = {}
    while pending:
        name = pending.pop()
        raw = spec["components"]["schemas"][name]
        defs[name] = to_json_schema(raw)
        pending |= schema_refs(raw) - set(defs)
    return {
        "source": f"npm {PACKAGE}, {MEMBER} (MIT, github/rest-api-description)",
        "operations": dict(sorted(operations.items())),
        "$defs": dict(sorted(defs.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tarball", type=Path, help="a downloaded octokit-openapi-*.tgz")
    args = parser.parse_args()
    subset = extract(load_spec(args.tarball))
    OUT.write_text(json.dumps(subset, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes, {len(subset['$defs'])} schemas)")


if __name__ == "__main__":
    main()
